import argparse
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError
from tqdm import tqdm

from analysis_jobs.api import SourceRefused, checked_source
from analysis_jobs.control_plane import DatabaseControlPlane
from analysis_jobs.exceptions import AnalysisError
from analysis_jobs.management.arguments import positive_int
from analysis_jobs.management.base import OneShotCommand
from analysis_jobs.management.database import ensure_database_ready
from analysis_jobs.models import AnalysisJob, JobStatus
from analysis_jobs.pipeline.config import PipelineConfig
from analysis_jobs.pipeline.repository import identity_for_revision
from analysis_jobs.pipeline.sources import resolve_revision
from analysis_jobs.presenters import job_as_dict, job_line


class Command(OneShotCommand):
    help = "Queue an analysis of each directory (or repository) given and print the job ids, one a line."
    stealth_options = ("stdin",)

    def add_arguments(self, parser):
        parser.add_argument("paths", nargs="*", metavar="PATH", help="Directory or repository to analyse.")
        parser.add_argument(
            "--from-file", metavar="FILE", help="Also queue every path in FILE, one a line ('-' reads standard input)."
        )
        parser.add_argument("--revision", default="", help="Revision (branch, tag or commit) to analyse.")
        parser.add_argument("--owner", help="Username of the user who owns the job.")
        parser.add_argument("--max-attempts", type=positive_int, help="Attempts before the job fails (default: the setting).")
        parser.add_argument("--wait", action="store_true", help="Follow the job to its end; exit non-zero unless it completed.")
        parser.add_argument("--json", action="store_true", dest="as_json", help="Print one JSON object per job instead of its id.")
        parser.add_argument("--wait-interval", type=float, default=0.5, help=argparse.SUPPRESS)

    def handle(self, *args, paths, from_file, revision, owner, max_attempts, wait, as_json, wait_interval, **options):
        if from_file is not None:
            paths = [*paths, *self._read_paths(from_file, options.get("stdin") or sys.stdin)]
        if not paths:
            raise CommandError("Give at least one PATH (or --from-file FILE).")
        if wait and len(paths) > 1:
            raise CommandError("--wait follows one job: give one PATH.")
        ensure_database_ready()
        owner_user = self._owner(owner)
        sources = [self._source(path) for path in paths]
        revision = revision.strip()
        commits = self._commits(sources, revision) if revision else {}
        config = PipelineConfig.from_settings()
        identities = {source: identity_for_revision(source, commit, config) for source, commit in commits.items()}
        control_plane = DatabaseControlPlane()
        options = {"revision": revision, "owner": owner_user, "max_attempts": max_attempts}
        if len(sources) == 1:
            source = sources[0]
            queued = [control_plane.enqueue(source, commit=commits.get(source, ""), reuse_identity=identities.get(source, ""), **options)]
        else:
            queued = control_plane.enqueue_many(sources, commits=commits, reuse_identities=identities, **options)
        jobs = []
        for source, (job, created) in zip(sources, queued):
            jobs.append(job)
            if not created and not as_json:
                self.stderr.write(f"{source} already has an active job ({job.pk}, {job.status}); not queued again.")
        if wait:
            jobs = [self._follow(jobs[0], wait_interval)]
        for job in jobs:
            self.stdout.write(json.dumps(job_as_dict(job), sort_keys=True) if as_json else str(job.pk))
        if wait and jobs[0].status != JobStatus.COMPLETED:
            raise CommandError(f"Job {jobs[0].pk} ended {jobs[0].status}: {jobs[0].error_code} {jobs[0].error_message}".rstrip())

    def _read_paths(self, name, stdin):
        """Return the non-blank lines of file ``name`` (or of ``stdin`` for '-'), without their line ends."""
        try:
            if name == "-":
                lines = stdin.read().splitlines()
            else:
                with open(name, encoding="utf-8") as handle:
                    lines = handle.read().splitlines()
        except OSError as exc:
            raise CommandError(f"{name}: cannot read the list of paths ({exc.strerror}); nothing was queued.") from None
        except UnicodeDecodeError as exc:
            raise CommandError(f"{name}: the list of paths is not UTF-8 text (byte {exc.start}); nothing was queued.") from None
        return [line for line in lines if line.strip()]

    def _commits(self, sources, revision):
        """Return the commit ``revision`` names in each of ``sources``, or stop at the first source (in order) that
        has none, with the reason, before anything is queued.

        Each source costs a git process, which this one only waits for, so the look-ups run side by side, one
        per core.
        """
        with ThreadPoolExecutor(max_workers=min(len(sources), os.cpu_count() or 1)) as pool:
            try:
                return dict(zip(sources, pool.map(lambda source: resolve_revision(source, revision), sources)))
            except AnalysisError as error:
                raise CommandError(f"{error.message} Nothing was queued.") from None

    def _owner(self, username):
        if username is None:
            return None
        try:
            return get_user_model().objects.get_by_natural_key(username)
        except get_user_model().DoesNotExist:
            raise CommandError(f"No user is called {username!r}.") from None

    def _source(self, path):
        try:
            return checked_source(path)
        except SourceRefused as refused:
            raise CommandError(f"{refused}; nothing was queued.") from None

    def _follow(self, job, interval):
        """Poll the job and show its progress until it ends: a bar on a terminal, else a line per change."""
        shown = None
        try:
            with tqdm(total=100, desc=f"job {job.pk}", unit="%", file=self.stderr._out, disable=None) as bar:
                while True:
                    job = AnalysisJob.objects.select_related("snapshot").get(pk=job.pk)
                    bar.set_postfix_str(f"{job.status} {job.stage}".strip())
                    bar.update(job.progress - bar.n)
                    if bar.disable and (job.status, job.stage, job.progress) != shown and not job.is_terminal:
                        shown = (job.status, job.stage, job.progress)
                        self.stderr.write(job_line(job))
                    if job.is_terminal:
                        break
                    time.sleep(interval)
        except KeyboardInterrupt:
            raise CommandError(
                f"Stopped following job {job.pk}; it is still {job.status}. Follow it with `analysis_status {job.pk}`.",
                returncode=130,
            ) from None
        self.stderr.write(job_line(job))
        return job

