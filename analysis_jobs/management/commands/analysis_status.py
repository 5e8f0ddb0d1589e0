import json

from django.core.management.base import CommandError

from analysis_jobs.clock import SystemClock
from analysis_jobs.health import summary, summary_lines, why_not_running
from analysis_jobs.management.arguments import job_id
from analysis_jobs.management.base import OneShotCommand
from analysis_jobs.management.database import ensure_database_ready
from analysis_jobs.models import AnalysisJob
from analysis_jobs.presenters import job_as_dict, job_line


class Command(OneShotCommand):
    help = "Show analysis jobs (the ones named, or the 20 newest) and why each is where it is, or the queue's health."

    clock = SystemClock()

    def add_arguments(self, parser):
        parser.add_argument("job_ids", nargs="*", type=job_id, metavar="JOB_ID", help="Jobs to show (default: the 20 newest).")
        parser.add_argument("--json", action="store_true", dest="as_json", help="Print JSON: one object per job, or the summary.")
        parser.add_argument("--summary", action="store_true", help="Show the queue's health instead of jobs.")

    def handle(self, *args, job_ids, as_json, summary: bool, **options):
        ensure_database_ready()
        now = self.clock.now()
        if summary:
            if job_ids:
                raise CommandError("--summary shows the whole queue: give it no JOB_ID.")
            self._print_summary(now, as_json)
            return
        jobs = AnalysisJob.objects.select_related("snapshot")
        if job_ids:
            found = jobs.in_bulk(job_ids)
            missing = [str(pk) for pk in job_ids if pk not in found]
            shown = [found[pk] for pk in job_ids if pk in found]
        else:
            missing, shown = [], list(jobs.order_by("-created_at", "-id")[:20])
        for job in shown:
            why = why_not_running(job, now)
            if as_json:
                self.stdout.write(json.dumps({**job_as_dict(job), "why": why}, sort_keys=True))
            else:
                self.stdout.write(f"{job_line(job)}\n    {why}")
        if missing:
            raise CommandError(f"No job with id {', '.join(missing)}.")

    def _print_summary(self, now, as_json: bool) -> None:
        health = summary(now)
        self.stdout.write(json.dumps(health, sort_keys=True) if as_json else "\n".join(summary_lines(health)))
