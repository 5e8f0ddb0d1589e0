"""The Python API other Django apps use, and the signals sent once per finished job, after commit."""

import pytest
from django.db import transaction

from analysis_jobs import api, signals
from analysis_jobs.control_plane import CancelOutcome
from analysis_jobs.decisions import Fail
from analysis_jobs.exceptions import CancelRefused, RevisionNotFound
from analysis_jobs.models import AnalysisJob, JobStatus
from tests.conftest import commit_all
from tests.documents_support import stored_document


@pytest.fixture
def heard():
    """Every finished signal sent, as (signal name, job id)."""
    received = []
    receivers = {}
    for name in ("analysis_completed", "analysis_failed", "analysis_cancelled"):
        def receiver(sender, job_id, name=name, **kwargs):
            assert sender is AnalysisJob
            received.append((name, job_id))
        receivers[name] = receiver
        getattr(signals, name).connect(receiver)
    yield received
    for name, receiver in receivers.items():
        getattr(signals, name).disconnect(receiver)


def test_enqueue_get_and_cancel(db, source_dir):
    job, created = api.enqueue(str(source_dir))
    assert created
    assert (api.get(job.pk).status, api.get(job.pk).source) == (JobStatus.QUEUED, str(source_dir.resolve()))
    assert api.enqueue(str(source_dir)) == (job, False)  # one active job per source and revision
    assert api.cancel(job.pk, by="app") is CancelOutcome.CANCELLED
    with pytest.raises(CancelRefused, match="already cancelled"):
        api.cancel(job.pk)
    with pytest.raises(AnalysisJob.DoesNotExist):
        api.get(10**9)


def test_enqueue_resolves_a_revision_and_refuses_what_it_cannot_queue(db, source_dir, tmp_path):
    commit = commit_all(source_dir)
    assert api.enqueue(str(source_dir), revision="HEAD")[0].commit == commit
    with pytest.raises(RevisionNotFound):
        api.enqueue(str(source_dir), revision="no-such-branch")
    with pytest.raises(api.SourceRefused, match="no such file or directory") as refused:
        api.enqueue(str(tmp_path / "gone"))
    assert refused.value.code == "source-not-found"
    assert AnalysisJob.objects.count() == 1


def test_roots_limit_what_may_be_queued_even_through_a_symlink(db, source_dir, tmp_path):
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    (allowed / "escape").symlink_to(source_dir)
    with pytest.raises(api.SourceRefused, match="not under an allowed source root") as refused:
        api.enqueue(str(allowed / "escape"), roots=[str(allowed)])
    assert refused.value.code == "source-outside-roots"
    assert api.enqueue(str(source_dir), roots=[str(source_dir.parent)])[0].source == str(source_dir.resolve())


def test_each_finish_is_heard_once_after_commit(transactional_db, control_plane, make_job, heard):
    completed, failed, cancelled_queued, cancelled_running = make_job(), make_job(), make_job(), make_job()
    lease = control_plane.claim(completed.pk, "w1")
    snapshot_id = control_plane.begin_snapshot(lease)
    assert control_plane.seal(lease, snapshot_id=snapshot_id, document=stored_document("{}"))
    assert control_plane.complete(lease)
    assert not control_plane.complete(lease)  # a second finish writes nothing, so says nothing
    control_plane.apply_failure(control_plane.claim(failed.pk, "w1"), Fail("RI-JOB-FAILED", "boom"))
    control_plane.request_cancel(cancelled_queued.pk)
    running = control_plane.claim(cancelled_running.pk, "w1")
    control_plane.request_cancel(cancelled_running.pk)
    assert heard == [("analysis_completed", completed.pk), ("analysis_failed", failed.pk), ("analysis_cancelled", cancelled_queued.pk)]
    assert control_plane.finish_cancelled(running)
    assert heard[-1] == ("analysis_cancelled", cancelled_running.pk)


def test_a_finish_that_rolls_back_is_never_heard(transactional_db, control_plane, make_job, heard):
    job = make_job()
    with pytest.raises(RuntimeError), transaction.atomic():
        control_plane.request_cancel(job.pk)
        assert heard == []  # not before the commit
        raise RuntimeError("the caller's transaction fails")
    assert heard == [] and AnalysisJob.objects.get(pk=job.pk).status == JobStatus.QUEUED
