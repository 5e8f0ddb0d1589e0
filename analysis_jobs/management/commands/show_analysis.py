import json

from django.core.management.base import CommandError

from analysis_jobs.management.arguments import job_id
from analysis_jobs.management.base import OneShotCommand
from analysis_jobs.management.database import ensure_database_ready
from analysis_jobs.models import AnalysisJob, SnapshotState
from analysis_jobs.pipeline.summary import describe, diagnostics

SHOWN_DIAGNOSTICS = 20


class Command(OneShotCommand):
    help = "Show what an analysis found: a summary of its sealed snapshot, or (--facts) the whole canonical document."

    def add_arguments(self, parser):
        parser.add_argument("job_id", type=job_id, metavar="JOB_ID", help="The job whose snapshot to show.")
        parser.add_argument("--json", action="store_true", dest="as_json", help="Print the summary as one JSON object.")
        parser.add_argument("--facts", action="store_true", help="Print the snapshot's canonical JSON document, byte for byte.")

    def handle(self, *args, job_id, as_json, facts, **options):
        if as_json and facts:
            raise CommandError("--facts prints the canonical JSON document itself; give --json or --facts, not both.")
        ensure_database_ready()
        job = AnalysisJob.objects.select_related("snapshot").filter(pk=job_id).first()
        if job is None:
            raise CommandError(f"No job with id {job_id}.")
        snapshot = job.snapshot
        if snapshot is None or snapshot.state != SnapshotState.SEALED:
            detail = f": {job.error_code} {job.error_message}".rstrip() if job.error_code else ""
            raise CommandError(f"Job {job.pk} has no sealed snapshot (it is {job.status}{detail}).")
        if facts:
            self._write_exactly(snapshot.iter_facts())
            return
        document = json.loads(snapshot.read_facts())
        summary = document.get("summary") or {}
        found = diagnostics(document.get("nodes", ()))
        if as_json:
            self.stdout.write(json.dumps({
                "job": job.pk,
                "status": job.status,
                "source": job.source,
                "revision": job.revision,
                "commit": job.commit,
                "snapshot": snapshot.pk,
                "graph_hash": snapshot.content_hash,
                "schema": document.get("schema"),
                "summary": summary,
                "diagnostics": found,
            }, sort_keys=True))
            return
        revision = f"  revision={job.revision} commit={job.commit}" if job.revision else ""
        self.stdout.write(f"job {job.pk}  {job.status}  source={job.source}{revision}")
        self.stdout.write(f"snapshot {snapshot.pk}  {document.get('schema')}  graph hash {snapshot.content_hash}")
        for line in describe(summary):
            self.stdout.write(line)
        for item in found[:SHOWN_DIAGNOSTICS]:
            self.stdout.write(f"  {item['code']}  {item['path']}:{item['line']}  {item['message']}")
        if len(found) > SHOWN_DIAGNOSTICS:
            self.stdout.write(f"  ... {len(found) - SHOWN_DIAGNOSTICS} more (--json lists them all)")

    def _write_exactly(self, texts) -> None:
        """Write ``texts`` as their UTF-8 bytes and nothing else, so that ``--facts | sha256sum`` is the graph hash.

        No line end is added, and the terminal's encoding plays no part: the bytes go to the stream's binary
        buffer when it has one (a text stream, as tests pass, gets the text). A chunk at a time: a document can
        be hundreds of MB.
        """
        binary = getattr(self.stdout, "buffer", None)
        for text in texts:
            if binary is None:
                self.stdout.write(text, ending="")
            else:
                binary.write(text.encode("utf-8"))  # nothing is written before it, so no text waits in front of it
        if binary is not None:
            binary.flush()
