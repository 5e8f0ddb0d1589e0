"""
The schema's invariants, enforced by the database itself on SQLite and PostgreSQL, and the sealed snapshot's
immutability. A write that breaks an invariant must fail loudly, whoever makes it.
"""

import datetime as dt

import pytest
from django.db import IntegrityError, transaction
from django.db.models import ProtectedError

from analysis_jobs.decisions import FAILED_CODE, Fail, Requeue
from analysis_jobs.models import AnalysisJob, AnalysisSnapshot, JobStatus, SealedSnapshotError, SnapshotState
from tests.documents_support import stored_document

NOW = dt.datetime(2026, 1, 1, 12, 0, tzinfo=dt.UTC)


def violates(constraint, write):
    """Assert that ``write()`` is refused by the database, naming ``constraint`` when the engine reports it."""
    with pytest.raises(IntegrityError) as caught, transaction.atomic():
        write()
    if constraint:
        assert constraint in str(caught.value)


@pytest.mark.parametrize(
    ("constraint", "changes"),
    [
        ("job_status_valid", dict(status="paused")),
        ("job_progress_0_100", dict(progress=101)),
        ("job_max_attempts_positive", dict(max_attempts=0)),
        ("job_attempt_within_budget", dict(attempt=4)),
        ("job_running_is_leased", dict(status=JobStatus.RUNNING)),
        ("job_running_is_leased", dict(status=JobStatus.RUNNING, worker_id="w1")),
        ("job_queued_is_unleased", dict(worker_id="w1")),
        ("job_queued_is_unleased", dict(lease_expires_at=NOW)),
        ("job_queued_not_cancelling", dict(cancel_requested=True)),
        ("job_terminal_is_finished", dict(status=JobStatus.FAILED)),
        ("job_terminal_is_finished", dict(status=JobStatus.CANCELLED, completed_at=NOW, lease_expires_at=NOW)),
        ("job_completed_has_snapshot", dict(status=JobStatus.COMPLETED, completed_at=NOW)),
    ],
)
def test_a_job_row_that_breaks_an_invariant_is_refused(db, make_job, constraint, changes):
    job = make_job(max_attempts=3)
    before = AnalysisJob.objects.filter(pk=job.pk).values().get()
    violates(constraint, lambda: AnalysisJob.objects.filter(pk=job.pk).update(**changes))
    assert AnalysisJob.objects.filter(pk=job.pk).values().get() == before


def test_rows_left_by_the_real_transitions_satisfy_every_invariant(db, control_plane, make_job):
    """The constraints above would refuse them otherwise; this pins that they are not too strict."""
    make_job()
    lease = control_plane.claim_next("w1")
    snapshot_id = lease.snapshot_id
    control_plane.request_cancel(lease.job_id)  # running with the flag set is allowed
    assert control_plane.seal(lease, snapshot_id=snapshot_id, document=stored_document("{}")) is False
    assert control_plane.finish_cancelled(lease)
    assert AnalysisJob.objects.get().status == JobStatus.CANCELLED


@pytest.mark.parametrize("active", [JobStatus.QUEUED, JobStatus.RUNNING])
def test_only_one_active_job_per_source_and_revision(db, control_plane, make_job, active):
    job = make_job(revision="main")
    if active == JobStatus.RUNNING:
        control_plane.claim_next("w1")
    # SQLite's message names the columns, PostgreSQL's the constraint: the refusal is what both share.
    violates(None, lambda: make_job(source=job.source, revision="main"))
    make_job(source=job.source, revision="other")  # another revision is another analysis


def test_a_finished_job_does_not_block_a_new_one_for_the_same_source(db, control_plane, make_job):
    job = make_job(revision="main")
    control_plane.request_cancel(job.pk)
    again = make_job(source=job.source, revision="main")
    assert again.status == JobStatus.QUEUED


@pytest.mark.parametrize(
    "changes",
    [dict(sealed_at=NOW), dict(content_hash="f" * 64), dict()],
    ids=["no-hash", "no-sealed-at", "neither"],
)
def test_a_sealed_snapshot_must_carry_its_hash_and_time(db, changes):
    snapshot = AnalysisSnapshot.objects.create(created_at=NOW)
    violates(
        "snapshot_sealed_has_hash",
        lambda: AnalysisSnapshot.objects.filter(pk=snapshot.pk).update(state=SnapshotState.SEALED, **changes),
    )


# -- the sealed snapshot is never modified ---------------------------------------------------------------------


@pytest.fixture
def sealed(db, control_plane, make_job):
    """A job whose snapshot is sealed and not yet completed: the lease and the snapshot's id."""
    make_job()
    lease = control_plane.claim_next("w1")
    snapshot_id = lease.snapshot_id
    assert control_plane.seal(lease, snapshot_id=snapshot_id, document=stored_document('{"k":1}'), identity="i")
    return lease, snapshot_id


def snapshot_row(snapshot_id):
    return AnalysisSnapshot.objects.filter(pk=snapshot_id).values().get()


def test_saving_a_sealed_snapshot_is_refused(sealed):
    _, snapshot_id = sealed
    before = snapshot_row(snapshot_id)
    snapshot = AnalysisSnapshot.objects.get(pk=snapshot_id)
    snapshot.content_hash = "f" * 64
    with pytest.raises(SealedSnapshotError):
        snapshot.save()
    assert snapshot_row(snapshot_id) == before


def test_a_copy_loaded_before_the_seal_cannot_overwrite_or_delete_it(db, control_plane, make_job):
    make_job()
    lease = control_plane.claim_next("w1")
    snapshot_id = lease.snapshot_id
    stale = AnalysisSnapshot.objects.get(pk=snapshot_id)
    assert control_plane.seal(lease, snapshot_id=snapshot_id, document=stored_document("{}"))
    before = snapshot_row(snapshot_id)
    stale.content_hash = "f" * 64
    with pytest.raises(SealedSnapshotError):
        stale.save()
    with pytest.raises((SealedSnapshotError, ProtectedError)):
        stale.delete()
    assert snapshot_row(snapshot_id) == before


def test_deleting_a_sealed_snapshot_is_refused(sealed):
    _, snapshot_id = sealed
    with pytest.raises(SealedSnapshotError):
        AnalysisSnapshot.objects.get(pk=snapshot_id).delete()
    assert AnalysisSnapshot.objects.filter(pk=snapshot_id).exists()


def test_no_transition_changes_a_sealed_snapshot(sealed, control_plane, fake_clock):
    lease, snapshot_id = sealed
    before = snapshot_row(snapshot_id)
    control_plane.request_cancel(lease.job_id)
    assert not control_plane.seal(lease, snapshot_id=snapshot_id, document=stored_document('{"k":3}'))
    assert not control_plane.finish_cancelled(lease)
    # A failure, a retry or a hand-back after the seal completes the job instead of throwing the seal away.
    assert control_plane.apply_failure(lease, Requeue(at=fake_clock.now(), code=FAILED_CODE, message="late"))
    assert control_plane.apply_failure(lease, Fail(code=FAILED_CODE, message="late")) is False
    assert control_plane.hand_back(lease) is False
    assert snapshot_row(snapshot_id) == before
    job = AnalysisJob.objects.get(pk=lease.job_id)
    assert (job.status, job.snapshot_id) == (JobStatus.COMPLETED, snapshot_id)
