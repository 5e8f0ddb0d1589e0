import datetime as dt

from analysis_jobs.clock import SystemClock
from analysis_jobs.documents import DocumentStore
from analysis_jobs.management.arguments import days
from analysis_jobs.management.base import OneShotCommand
from analysis_jobs.management.database import ensure_database_ready
from analysis_jobs.pipeline.repository import FactsCache


class Command(OneShotCommand):
    help = (
        "Delete cached per-file facts, digests and splice bases recorded more than --older-than days ago, and the document chunks "
        "stored that long ago that no sealed snapshot lists (their seal never came). The caches only grow; what is "
        "pruned is read and parsed again by the next analysis that needs it, so results never change."
    )

    def add_arguments(self, parser):
        parser.add_argument("--older-than", type=days, default=30, metavar="DAYS",
                            help="Prune rows recorded more than DAYS ago (default 30; 0 prunes everything).")
        parser.add_argument("--dry-run", action="store_true", help="Count what would be pruned, and delete nothing.")

    def handle(self, *args, older_than, dry_run, **options):
        ensure_database_ready()
        before = SystemClock().now() - dt.timedelta(days=older_than)
        counts = FactsCache().prune(before, dry_run=dry_run)
        counts["unlisted document chunks"] = DocumentStore().prune(before, dry_run=dry_run)
        verb = "would prune" if dry_run else "pruned"
        listed = ", ".join(f"{count} {name}" for name, count in counts.items())
        self.stdout.write(f"{verb} {listed} recorded before {before:%Y-%m-%d %H:%M} UTC")
