from django.contrib.auth import get_user_model
from django.core.management.base import CommandError

from analysis_jobs.clock import SystemClock
from analysis_jobs.management.base import OneShotCommand
from analysis_jobs.management.database import ensure_database_ready
from analysis_jobs.models import ApiToken


class Command(OneShotCommand):
    help = "Make an HTTP API token acting as USERNAME and print it (it is shown once: only its digest is kept)."

    def add_arguments(self, parser):
        parser.add_argument("username", help="The user the token acts as.")
        parser.add_argument("--name", default="", help="What the token is for (shown in the admin).")

    def handle(self, *args, username, name, **options):
        ensure_database_ready()
        try:
            user = get_user_model().objects.get_by_natural_key(username)
        except get_user_model().DoesNotExist:
            raise CommandError(f"No user is called {username!r}.") from None
        _token, secret = ApiToken.issue(user, name, now=SystemClock().now())
        self.stdout.write(secret)
