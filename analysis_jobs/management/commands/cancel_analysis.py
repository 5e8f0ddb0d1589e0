from django.core.management.base import CommandError

from analysis_jobs.control_plane import CancelOutcome, DatabaseControlPlane
from analysis_jobs.exceptions import CancelRefused
from analysis_jobs.management.arguments import job_id
from analysis_jobs.management.base import OneShotCommand
from analysis_jobs.management.database import ensure_database_ready


class Command(OneShotCommand):
    help = "Cancel analysis jobs: a queued job at once, a running one at its worker's next renewal."

    def add_arguments(self, parser):
        parser.add_argument("job_ids", nargs="+", type=job_id, metavar="JOB_ID", help="Jobs to cancel.")

    def handle(self, *args, job_ids, **options):
        ensure_database_ready()
        control_plane = DatabaseControlPlane()
        refused = []
        for pk in job_ids:
            try:
                outcome = control_plane.request_cancel(pk, by="cancel_analysis")
            except CancelRefused as refusal:
                refused.append(str(refusal))
                continue
            if outcome is CancelOutcome.CANCELLED:
                self.stdout.write(f"job {pk}: cancelled")
            else:
                self.stdout.write(f"job {pk}: cancellation requested; its worker stops at its next renewal")
        if refused:
            raise CommandError(" ".join(refused))
