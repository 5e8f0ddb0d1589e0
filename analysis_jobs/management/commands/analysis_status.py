import json

from django.core.management.base import CommandError

from analysis_jobs.management.arguments import job_id
from analysis_jobs.management.base import OneShotCommand
from analysis_jobs.management.database import ensure_database_ready
from analysis_jobs.models import AnalysisJob
from analysis_jobs.presenters import job_as_dict, job_line


class Command(OneShotCommand):
    help = "Show analysis jobs: the ones named, or the 20 newest."

    def add_arguments(self, parser):
        parser.add_argument("job_ids", nargs="*", type=job_id, metavar="JOB_ID", help="Jobs to show (default: the 20 newest).")
        parser.add_argument("--json", action="store_true", dest="as_json", help="Print one JSON object per job.")

    def handle(self, *args, job_ids, as_json, **options):
        ensure_database_ready()
        jobs = AnalysisJob.objects.select_related("snapshot")
        if job_ids:
            found = jobs.in_bulk(job_ids)
            missing = [str(pk) for pk in job_ids if pk not in found]
            shown = [found[pk] for pk in job_ids if pk in found]
        else:
            missing, shown = [], list(jobs.order_by("-created_at", "-id")[:20])
        for job in shown:
            self.stdout.write(json.dumps(job_as_dict(job), sort_keys=True) if as_json else job_line(job))
        if missing:
            raise CommandError(f"No job with id {', '.join(missing)}.")
