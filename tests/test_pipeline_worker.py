"""The repository pipeline under the worker and the control plane: the cache, reuse by identity, revisions, budgets."""

import hashlib
import io
import os
import time

import pytest
from django.core.management import CommandError, call_command
from django.test import override_settings
from django.conf import settings

from analysis_jobs.control_plane import DatabaseControlPlane
from analysis_jobs.logs import fields_of
from analysis_jobs.models import AnalysisJob, AnalysisSnapshot, BlobDigest, FileFacts, JobStatus, SnapshotBasis, SnapshotState, StatDigest
from analysis_jobs.pipeline import AnalysisState, RepositoryPipeline
from analysis_jobs.pipeline import parsing, repository as repository_pipeline
from analysis_jobs.pipeline.repository import Digest, FactsCache, identity_for_revision
from analysis_jobs.worker import JobOutcome
from tests.pipeline_support import analyse, commit_tree, write_tree


@pytest.fixture
def run_job(control_plane, make_worker):
    """Claim the next job and run it with the repository pipeline built from the current settings."""

    def run():
        return make_worker(RepositoryPipeline()).run(control_plane.claim_next("w1"))

    return run


def test_an_unchanged_directory_reuses_its_sealed_snapshot_and_a_changed_one_parses_only_the_change(
    db, control_plane, run_job, tmp_path
):
    root = write_tree(tmp_path / "r", {"a.py": "import os\n", "b.py": "import sys\n", "c.js": "import x from 'y';\n"})
    first, _ = control_plane.enqueue(str(root))
    assert run_job() is JobOutcome.COMPLETED
    first.refresh_from_db()
    assert FileFacts.objects.count() == 3

    second, _ = control_plane.enqueue(str(root))
    assert run_job() is JobOutcome.COMPLETED
    second.refresh_from_db()
    assert (second.status, second.snapshot_id) == (JobStatus.COMPLETED, first.snapshot_id)
    assert AnalysisSnapshot.objects.count() == 1  # the second attempt's building snapshot is gone, not failed

    write_tree(root, {"b.py": "import json\n"})
    third, _ = control_plane.enqueue(str(root))
    assert run_job() is JobOutcome.COMPLETED
    third.refresh_from_db()
    assert third.snapshot_id != first.snapshot_id and third.snapshot.state == SnapshotState.SEALED
    assert FileFacts.objects.count() == 4  # one new parse, two cache hits
    assert third.snapshot.content_hash != first.snapshot.content_hash


def test_a_directory_whose_unread_file_changed_size_is_analysed_again(db, control_plane, run_job, tmp_path):
    root = write_tree(tmp_path / "r", {"a.py": "import os\n", "big.bin": b"x" * 200})
    with override_settings(ANALYSIS_JOBS={**settings.ANALYSIS_JOBS, "MAX_FILE_BYTES": 100}):
        first, _ = control_plane.enqueue(str(root))
        assert run_job() is JobOutcome.COMPLETED
        write_tree(root, {"big.bin": b"x" * 300})  # still too large to read, so its content hash stays empty
        second, _ = control_plane.enqueue(str(root))
        assert run_job() is JobOutcome.COMPLETED
    first.refresh_from_db()
    second.refresh_from_db()
    assert second.snapshot_id != first.snapshot_id
    assert '"size":300' in second.snapshot.read_facts() and '"size":200' in first.snapshot.read_facts()


def test_a_syntax_error_is_a_diagnostic_and_the_job_completes(db, control_plane, run_job, tmp_path):
    root = write_tree(tmp_path / "r", {"ok.py": "x = 1\n", "bad.py": "def f(:\n"})
    job, _ = control_plane.enqueue(str(root))
    assert run_job() is JobOutcome.COMPLETED
    job.refresh_from_db()
    assert '"diag:parse-error:bad.py"' in job.snapshot.read_facts()


def test_a_source_over_budget_fails_at_once_with_resource_exceeded(db, control_plane, run_job, tmp_path):
    root = write_tree(tmp_path / "r", {f"f{index}.py": "" for index in range(3)})
    job, _ = control_plane.enqueue(str(root), max_attempts=3)
    with override_settings(ANALYSIS_JOBS={**settings.ANALYSIS_JOBS, "MAX_FILES": 2}):
        assert run_job() is JobOutcome.FAILED
    job.refresh_from_db()
    assert (job.status, job.attempt, job.error_code) == (JobStatus.FAILED, 1, "RI-RESOURCE-EXCEEDED")
    assert "ANALYSIS_MAX_FILES" in job.error_message
    assert job.snapshot.state == SnapshotState.FAILED


@pytest.fixture
def repository(tmp_path):
    root = write_tree(tmp_path / "repo", {"app.py": "import requests\n", "requirements.txt": "requests\n"})
    first = commit_tree(root)
    write_tree(root, {"app.py": "import httpx\n"})
    second = commit_tree(root)
    return root, first, second


def test_enqueue_records_the_commit_and_the_worker_reads_that_commit_even_after_the_branch_moves(
    db, run_job, repository, capsys
):
    root, first, second = repository
    call_command("enqueue_analysis", str(root), "--revision", "HEAD")
    job = AnalysisJob.objects.get()
    assert (job.revision, job.commit, job.status) == ("HEAD", second, JobStatus.QUEUED)
    write_tree(root, {"app.py": "import django\n"})
    commit_tree(root)  # HEAD moves on before a worker picks the job up
    assert run_job() is JobOutcome.COMPLETED
    job.refresh_from_db()
    assert '"dep:pypi:httpx"' in job.snapshot.read_facts() and '"dep:pypi:django"' not in job.snapshot.read_facts()
    assert job.snapshot.identity == identity_for_revision(str(root), second)


def test_a_revision_that_was_analysed_before_completes_at_enqueue(db, run_job, repository):
    root, first, _ = repository
    call_command("enqueue_analysis", str(root), "--revision", first)
    assert run_job() is JobOutcome.COMPLETED
    original = AnalysisJob.objects.get()
    call_command("enqueue_analysis", str(root), "--revision", first[:12])
    again = AnalysisJob.objects.exclude(pk=original.pk).get()
    assert (again.status, again.commit, again.snapshot_id, again.attempt) == (JobStatus.COMPLETED, first, original.snapshot_id, 0)
    assert DatabaseControlPlane().claim_next("w1") is None


def test_many_folders_at_a_revision_are_queued_at_its_commit_in_bulk_and_reuse_what_was_analysed(db, run_job, repository):
    root, first, _ = repository
    write_tree(root, {"lib/b.py": "import json\n", "other/c.py": "import csv\n"})
    third = commit_tree(root)
    folders = [str(root / "lib"), str(root / "other")]
    call_command("enqueue_analysis", folders[0], "--revision", third)
    assert run_job() is JobOutcome.COMPLETED
    analysed = AnalysisJob.objects.get()

    call_command("enqueue_analysis", *folders, str(root), "--revision", "HEAD", stdout=io.StringIO())

    jobs = list(AnalysisJob.objects.exclude(pk=analysed.pk).order_by("pk"))
    assert [(job.source, job.commit, job.status) for job in jobs] == [
        (folders[0], third, JobStatus.COMPLETED), (folders[1], third, JobStatus.QUEUED), (str(root), third, JobStatus.QUEUED),
    ]
    assert jobs[0].snapshot_id == analysed.snapshot_id


def test_an_unknown_revision_or_a_revision_of_a_plain_directory_queues_nothing(db, repository, tmp_path):
    root, _, _ = repository
    with pytest.raises(CommandError, match="names no commit") as raised:
        call_command("enqueue_analysis", str(root), "--revision", "no-such-tag")
    assert raised.value.returncode == 1
    plain = write_tree(tmp_path / "plain", {"a.py": ""})
    with pytest.raises(CommandError, match="not a git repository"):
        call_command("enqueue_analysis", str(root), str(plain), "--revision", "HEAD")
    assert not AnalysisJob.objects.exists()


def test_a_job_queued_with_a_revision_but_no_commit_resolves_it_when_it_runs(db, control_plane, run_job, repository):
    root, _, second = repository
    job, _ = control_plane.enqueue(str(root), revision="HEAD")
    assert run_job() is JobOutcome.COMPLETED
    job.refresh_from_db()
    assert job.snapshot.identity == identity_for_revision(str(root), second)


def test_the_next_commit_reads_from_git_only_the_blobs_it_has_not_seen(db, control_plane, make_worker, repository):
    root, first, second = repository
    analyses = []

    class Recording(RepositoryPipeline):
        def document(self, state):
            analyses.append(state.values["stats"])
            return super().document(state)

    def analyse(commit):
        control_plane.enqueue(str(root), revision=commit, commit=commit)
        assert make_worker(Recording()).run(control_plane.claim_next("w1")) is JobOutcome.COMPLETED

    analyse(first)
    assert analyses[0]["read"] == 2 and BlobDigest.objects.count() == 2
    analyse(second)
    assert (analyses[1]["read"], analyses[1]["remembered"], analyses[1]["parsed"]) == (1, 1, 1)  # app.py alone
    assert BlobDigest.objects.count() == 3
    requirements = BlobDigest.objects.get(sha256=hashlib.sha256(b"requests\n").hexdigest())
    assert (requirements.size, requirements.lines, requirements.binary) == (9, 1, False)


def test_a_directory_file_left_alone_is_not_read_again_by_the_next_analysis(db, control_plane, make_worker, tmp_path):
    root = write_tree(tmp_path / "r", {"a.py": "import os\n", "b.py": "import sys\n"})
    long_ago = 1_700_000_000 * 10**9
    for name in ("a.py", "b.py"):
        os.utime(root / name, ns=(long_ago, long_ago))
    analyses = []

    class Recording(RepositoryPipeline):
        def document(self, state):
            analyses.append(state.values["stats"])
            return super().document(state)

    def analyse():
        control_plane.enqueue(str(root))
        settled = Recording(time_ns=lambda: time.time_ns() + 10 * 10**9)  # every file was written long enough ago
        assert make_worker(settled).run(control_plane.claim_next("w1")) is JobOutcome.COMPLETED

    analyse()
    assert analyses[0]["read"] == 2 and StatDigest.objects.count() == 2
    write_tree(root, {"b.py": "import json\n"})
    os.utime(root / "b.py", ns=(long_ago + 1, long_ago + 1))
    analyse()
    assert (analyses[1]["read"], analyses[1]["remembered"], analyses[1]["parsed"]) == (1, 1, 1)  # b.py alone
    assert StatDigest.objects.count() == 3
    job = AnalysisJob.objects.latest("pk")
    assert "dep:pypi:json" not in job.snapshot.read_facts() and '"std:py:json"' in job.snapshot.read_facts()


def test_complete_with_snapshot_is_guarded(db, control_plane, make_job, fake_clock):
    sealed = AnalysisSnapshot.objects.create(created_at=fake_clock.now())
    AnalysisSnapshot.objects.filter(pk=sealed.pk).update(state=SnapshotState.SEALED, content_hash="a" * 64, sealed_at=fake_clock.now())
    building = AnalysisSnapshot.objects.create(created_at=fake_clock.now())

    make_job()
    lease = control_plane.claim_next("w1")
    assert control_plane.complete_with_snapshot(lease, building.pk) is False  # not sealed: nothing written
    control_plane.request_cancel(lease.job_id)
    assert control_plane.complete_with_snapshot(lease, sealed.pk) is False  # the cancellation wins
    assert AnalysisJob.objects.get(pk=lease.job_id).status == JobStatus.RUNNING

    make_job()
    other = control_plane.claim_next("w2")
    stale = type(other)(other.job_id, "someone-else", other.attempt, other.expires_at)
    assert control_plane.complete_with_snapshot(stale, sealed.pk) is False
    assert control_plane.complete_with_snapshot(other, sealed.pk) is True
    assert AnalysisJob.objects.filter(pk=other.job_id, status=JobStatus.COMPLETED, snapshot_id=sealed.pk).exists()


def test_the_facts_cache_is_shared_by_content_across_sources(db, tmp_path):
    one = write_tree(tmp_path / "one", {"a.py": "import os\n"})
    two = write_tree(tmp_path / "two", {"renamed.py": "import os\n"})
    pipeline = RepositoryPipeline(reuse=False)
    for root in (one, two):
        state = AnalysisState(source=str(root))
        for stage in pipeline.stages:
            stage.run(state, lambda: None)
    assert (state.values["stats"]["parsed"], state.values["stats"]["cached"]) == (0, 1)
    assert FileFacts.objects.count() == 1


@pytest.mark.parametrize("kind, table", [("git", BlobDigest), ("directory", StatDigest)])
def test_the_facts_cache_finds_every_key_of_a_look_up_larger_than_one_statement_binds(
    db, django_assert_num_queries, monkeypatch, kind, table
):
    monkeypatch.setattr(FactsCache, "PG_CHUNK", FactsCache.CHUNK)  # several statements on PostgreSQL too
    cache = FactsCache()
    count = 3 * FactsCache.CHUNK + 7
    digests = {f"{n:040x}": Digest(n, f"{n:064x}", n, n % 3 == 0) for n in range(count)}
    facts = {(f"{n:064x}", "python@1"): f'{{"defs":[["function","f{n}",1,1]]}}' for n in range(0, count, 2)}
    cache.put_digests(kind, digests)
    cache.put_digests(kind, {f"{0:040x}": Digest(7, "e" * 64, 7, False)})  # recorded already: left as it was
    assert table.objects.count() == count
    cache.put_many(facts)
    cache.put_many({(f"{0:064x}", "python@1"): '{"defs":[]}'})  # recorded already: left as it was
    asked = [f"{n:040x}" for n in range(count + 3)]  # three never seen

    found, contents = cache.get_digests(kind, asked)
    assert found == digests
    assert contents == facts
    assert cache.get_many(set(facts) | {("f" * 64, "python@1")}) == facts
    with django_assert_num_queries(0):  # nothing asked, nothing sent
        assert cache.get_many(set()) == {} and cache.get_digests(kind, []) == ({}, {})


@pytest.mark.postgres_only
def test_the_statements_that_carry_facts_and_chunks_leave_no_copy_of_them_on_the_connection(db, control_plane, make_worker, tmp_path):
    """psycopg keeps the text of the last 100 statements a connection ran, to prepare those it sees often: had the
    facts and the document's chunks been written into the statements' text, the worker would keep up to 100
    batches of them for as long as its connection lives (250 MB of a 25,000-file analysis)."""
    from django.db import connection

    files = {f"pkg/m{n}.py": "".join(f"def f{n}_{i}():\n    return {i}\n" for i in range(60)) for n in range(80)}
    job, _ = control_plane.enqueue(str(write_tree(tmp_path / "r", {"pkg/__init__.py": "", **files})))
    settled = RepositoryPipeline(time_ns=lambda: time.time_ns() + 10 * 10**9)  # written long enough ago to be stamped
    assert make_worker(settled).run(control_plane.claim_next("w1")) is JobOutcome.COMPLETED
    job.refresh_from_db()
    # Big batches of facts, stamps and chunks were written.
    assert (job.snapshot.size > 500_000, FileFacts.objects.count(), StatDigest.objects.count()) == (True, 81, 81)
    # The tally is psycopg's private state: no public interface says what it keeps.
    tally = connection.connection._prepared
    kept = [query for query, _ in [*tally._counts, *tally._names]]
    assert kept and max(map(len, kept)) < 2048


def test_a_re_analysis_seals_the_spliced_document_a_full_link_would_write(db, control_plane, run_job, tmp_path, monkeypatch, caplog):
    splices = []

    class Spy(repository_pipeline.Splice):
        def pieces(self, *args):
            splices.append(self.plan.changed)
            return super().pieces(*args)

    monkeypatch.setattr(repository_pipeline, "Splice", Spy)
    root = write_tree(tmp_path / "r", {"a.py": "import os\n\ndef f():\n    pass\n", "b.py": "import sys\n", "Dockerfile": "FROM alpine:3\n"})
    first, _ = control_plane.enqueue(str(root))
    assert run_job() is JobOutcome.COMPLETED
    first.refresh_from_db()
    assert list(SnapshotBasis.objects.values_list("snapshot_id", flat=True)) == [first.snapshot_id]
    assert splices == []

    write_tree(root, {"b.py": "import json\n\ndef g():\n    pass\n"})
    second, _ = control_plane.enqueue(str(root))
    assert run_job() is JobOutcome.COMPLETED
    second.refresh_from_db()
    assert splices == [{"b.py"}]
    assert second.snapshot.read_facts() == analyse(root).text
    assert second.snapshot.summary == analyse(root).summary
    # Only the latest basis of the source is kept: no analysis splices from an older one.
    assert list(SnapshotBasis.objects.values_list("snapshot_id", flat=True)) == [second.snapshot_id]
    # Each sealed analysis logs what it did, so that a slow re-analysis says why it linked in full.
    analysed = [fields_of(record.getMessage()) for record in caplog.records if "state=analysed" in record.getMessage()]
    assert [(fields["job"], fields.get("linked_in_full"), fields.get("spliced")) for fields in analysed] == [
        (first.pk, "no-basis", None), (second.pk, None, 1)]
    assert (analysed[0]["listed"], analysed[0]["parsed"], analysed[1]["parsed"]) == (3, 3, 1)


def test_a_basis_that_cannot_be_kept_is_logged_and_the_job_completes(db, control_plane, run_job, tmp_path, monkeypatch, caplog):
    def refuse(self, state, snapshot_id):
        raise RuntimeError("disk full")

    monkeypatch.setattr(RepositoryPipeline, "sealed", refuse)
    job, _ = control_plane.enqueue(str(write_tree(tmp_path / "r", {"a.py": "import os\n"})))
    assert run_job() is JobOutcome.COMPLETED
    job.refresh_from_db()
    assert job.status == JobStatus.COMPLETED and job.snapshot.state == SnapshotState.SEALED
    assert not SnapshotBasis.objects.exists()
    assert "state=basis_not_kept" in caplog.text


def test_a_job_parsed_over_processes_seals_the_document_parsed_in_the_worker(db, control_plane, run_job, tmp_path, monkeypatch, settings):
    started = []

    class Spy(repository_pipeline.Parsers):
        def close(self):
            started.append(self.started)
            super().close()

    monkeypatch.setattr(repository_pipeline, "Parsers", Spy)
    monkeypatch.setattr(parsing, "SHARED_FROM", 2)
    settings.ANALYSIS_JOBS = {**settings.ANALYSIS_JOBS, "EXTRACT_PROCESSES": 2}
    root = write_tree(tmp_path / "r", {f"pkg/m{i}.py": f"import os\nfrom pkg import m{i + 1}\n" for i in range(6)} | {"Dockerfile": "FROM alpine:3\n"})
    job, _ = control_plane.enqueue(str(root))
    assert run_job() is JobOutcome.COMPLETED
    job.refresh_from_db()
    assert started == [2]
    assert job.snapshot.read_facts() == analyse(root).text
