"""
The worker against a real database: how an attempt ends, on SQLite and PostgreSQL with the same assertions.

The pipeline here is a test double built from the real ``Stage`` and ``AnalysisState`` types; its stages do what
the test needs at the moment it needs it (raise, request a cancellation, let the sweeper reclaim the job, or
block on a ``threading.Event`` while another thread acts). The control plane is always the real one.
"""

import datetime as dt
import gc
import hashlib
import threading
import time

import pytest
from django.db import connections

from analysis_jobs import faults
from analysis_jobs.control_plane import CANCELLED_CODE, HANDED_BACK_CODE, DatabaseControlPlane, JobLease
from analysis_jobs.decisions import FAILED_CODE
from analysis_jobs.exceptions import JobCancelled, LeaseLost, SourceNotFound
from analysis_jobs.models import AnalysisJob, AnalysisSnapshot, JobStatus, SnapshotState
from analysis_jobs.pipeline import AnalysisState, Stage, canonical_json
from analysis_jobs.worker import Heartbeat, JobOutcome, _Flags

LEASE = 30


def row(job_id):
    return AnalysisJob.objects.filter(pk=job_id).values().get()


def snapshot_rows():
    return list(AnalysisSnapshot.objects.order_by("pk").values())


class StagedPipeline:
    """A pipeline of named stages that record that they ran, then do ``actions[name](state, check)``."""

    def __init__(self, *names, actions=None, identity=None):
        self.ran = []
        self.actions = actions or {}
        self.stages = tuple(Stage(name, self._runner(name)) for name in names)
        self._identity = identity

    def _runner(self, name):
        def run(state: AnalysisState, check):
            self.ran.append(name)
            state.values.setdefault("ran", []).append(name)
            if name in self.actions:
                self.actions[name](state, check)

        return run

    def document(self, state):
        return {"schema": "test", "source": state.source, "ran": state.values.get("ran", [])}

    def identity(self, state):
        return self._identity(state) if self._identity else ""


@pytest.fixture
def worker_for(make_worker, control_plane):
    """Build a worker on the test's control plane and clock; its heartbeat never fires during a test."""

    def build(pipeline=None, control_plane=control_plane):
        return make_worker(pipeline, control_plane=control_plane, retry_base=2, retry_cap=60)

    return build


def raise_(error):
    def action(state, check):
        raise error

    return action


# -- the happy path --------------------------------------------------------------------------------------------


def test_a_job_runs_its_stages_saving_progress_and_renewing_then_seals_and_completes(
    db, control_plane, worker_for, make_job, fake_clock
):
    job = make_job()
    seen = []

    def observe(state, check):
        current = row(job.pk)
        seen.append((current["stage"], current["progress"], current["lease_expires_at"], fake_clock.now()))
        fake_clock.advance(10)

    pipeline = StagedPipeline("resolve", "inventory", actions={"resolve": observe, "inventory": observe})
    lease = control_plane.claim_next("w1")
    assert worker_for(pipeline).run(lease) is JobOutcome.COMPLETED
    assert [(stage, progress) for stage, progress, _, _ in seen] == [("resolve", 0), ("inventory", 45)]
    # Each boundary renewed the lease from the moment it was reached.
    for _, _, expires, at in seen:
        assert (expires - at).total_seconds() == LEASE
    after = row(job.pk)
    assert (after["status"], after["stage"], after["progress"], after["attempt"]) == (JobStatus.COMPLETED, "done", 100, 1)
    assert (after["error_code"], after["lease_expires_at"], after["completed_at"]) == ("", None, fake_clock.now())
    snapshot = AnalysisSnapshot.objects.get(pk=after["snapshot_id"])
    assert snapshot.state == SnapshotState.SEALED
    assert snapshot.read_facts() == canonical_json(pipeline.document(AnalysisState(job.source, values={"ran": pipeline.ran})))
    assert snapshot.content_hash == hashlib.sha256(snapshot.read_facts().encode()).hexdigest()


# A job with no stages costs the queue its claim, its document's store (which chunks exist already, then the new
# ones under the owner's guard), its seal and its completion: one statement each on PostgreSQL. SQLite adds the
# claim's idle check and write transaction (7 statements in a test's savepoint), checks the guard apart from the
# chunks' insert, and runs the seal's two updates and its chunk list's insert in a transaction of their own (6).
NO_STAGE_JOB_QUERIES = {"postgresql": 5, "sqlite": 16}


def test_a_job_with_no_stages_costs_its_claim_its_seal_and_its_completion(
    db, control_plane, worker_for, make_job, django_assert_num_queries
):
    job = make_job()
    with django_assert_num_queries(NO_STAGE_JOB_QUERIES[connections["default"].vendor]):
        lease = control_plane.claim_next("w1")
        assert worker_for(StagedPipeline()).run(lease) is JobOutcome.COMPLETED
    after = row(job.pk)
    assert (after["status"], AnalysisSnapshot.objects.get(pk=after["snapshot_id"]).state) == (JobStatus.COMPLETED, SnapshotState.SEALED)


@pytest.mark.parametrize("ending", ["completes", "fails"])
def test_the_cycle_collector_is_paused_for_an_attempt_and_running_again_after_it(
    db, control_plane, worker_for, make_job, ending
):
    make_job()
    during = []

    def observe(state, check):
        during.append(gc.isenabled())
        if ending == "fails":
            raise ValueError("a stage failed")

    assert gc.isenabled()
    outcome = worker_for(StagedPipeline("only", actions={"only": observe})).run(control_plane.claim_next("w1"))
    assert outcome is (JobOutcome.COMPLETED if ending == "completes" else JobOutcome.REQUEUED)
    assert during == [False]
    assert gc.isenabled()


def test_the_default_pipeline_inventories_a_real_directory(db, control_plane, worker_for, make_job):
    job = make_job(revision="")
    assert worker_for().run(control_plane.claim_next("w1")) is JobOutcome.COMPLETED
    snapshot = AnalysisSnapshot.objects.get(pk=row(job.pk)["snapshot_id"])
    assert snapshot.state == SnapshotState.SEALED
    assert "pkg/app.py" in snapshot.read_facts() and "README.md" in snapshot.read_facts()
    assert snapshot.content_hash == hashlib.sha256(snapshot.read_facts().encode()).hexdigest()


# -- failures --------------------------------------------------------------------------------------------------


def test_a_missing_source_fails_at_once_without_a_retry(db, control_plane, worker_for, make_job, tmp_path):
    job = make_job(source=str(tmp_path / "nowhere"), revision="", max_attempts=3)
    assert worker_for().run(control_plane.claim_next("w1")) is JobOutcome.FAILED
    after = row(job.pk)
    assert (after["status"], after["attempt"], after["error_code"]) == (JobStatus.FAILED, 1, SourceNotFound.code)
    assert "does not exist" in after["error_message"]
    snapshot = AnalysisSnapshot.objects.get()
    assert (snapshot.state, snapshot.failure_code) == (SnapshotState.FAILED, SourceNotFound.code)
    assert control_plane.claim_next("w1") is None


def test_an_error_is_retried_with_growing_backoff_then_fails_with_its_message(
    db, control_plane, worker_for, make_job, fake_clock
):
    job = make_job(max_attempts=3)
    worker = worker_for(StagedPipeline("explode", actions={"explode": raise_(RuntimeError("boom"))}))
    ceilings = [2, 4]  # base 2 s, doubling; the jitter spreads each delay over its upper half
    for attempt, ceiling in enumerate(ceilings, start=1):
        lease = control_plane.claim_next("w1")
        assert lease.attempt == attempt
        assert worker.run(lease) is JobOutcome.REQUEUED
        after = row(job.pk)
        assert (after["status"], after["attempt"], after["worker_id"]) == (JobStatus.QUEUED, attempt, "")
        assert (after["error_code"], after["error_message"]) == (FAILED_CODE, "RuntimeError: boom")
        delay = (after["next_attempt_at"] - fake_clock.now()).total_seconds()
        assert ceiling / 2 <= delay <= ceiling
        assert control_plane.claim_next("w1") is None  # hidden by its backoff
        fake_clock.advance(ceiling)
    lease = control_plane.claim_next("w1")
    assert worker.run(lease) is JobOutcome.FAILED
    after = row(job.pk)
    assert (after["status"], after["attempt"], after["error_code"]) == (JobStatus.FAILED, 3, FAILED_CODE)
    assert "RuntimeError: boom" in after["error_message"] and "no attempts left" in after["error_message"]
    assert [(s["state"], s["failure_code"]) for s in snapshot_rows()] == [(SnapshotState.FAILED, FAILED_CODE)] * 3
    fake_clock.advance(3600)
    assert control_plane.claim_next("w1") is None


def test_keyboard_interrupt_hands_the_job_back_and_propagates(db, control_plane, worker_for, make_job):
    job = make_job()
    worker = worker_for(StagedPipeline("one", actions={"one": raise_(KeyboardInterrupt())}))
    with pytest.raises(KeyboardInterrupt):
        worker.run(control_plane.claim_next("w1"))
    after = row(job.pk)
    assert (after["status"], after["attempt"], after["worker_id"]) == (JobStatus.QUEUED, 0, "")
    assert AnalysisSnapshot.objects.get().failure_code == HANDED_BACK_CODE


# -- cancellation ----------------------------------------------------------------------------------------------


def test_a_cancellation_during_a_stage_stops_the_job_at_the_next_boundary(db, control_plane, worker_for, make_job):
    job = make_job()
    pipeline = StagedPipeline("one", "two", actions={"one": lambda state, check: control_plane.request_cancel(job.pk)})
    assert worker_for(pipeline).run(control_plane.claim_next("w1")) is JobOutcome.CANCELLED
    assert pipeline.ran == ["one"]
    after = row(job.pk)
    assert (after["status"], after["error_code"], after["lease_expires_at"]) == (JobStatus.CANCELLED, CANCELLED_CODE, None)
    snapshot = AnalysisSnapshot.objects.get()
    assert (snapshot.state, snapshot.failure_code) == (SnapshotState.FAILED, CANCELLED_CODE)


def test_a_cancellation_between_the_last_renewal_and_the_seal_wins(db, control_plane, worker_for, make_job):
    job = make_job()

    def cancel_now(state):
        # The worker asks for the identity as it calls seal, after its last renewal: the latest possible moment.
        control_plane.request_cancel(job.pk)
        return ""

    pipeline = StagedPipeline("one", identity=cancel_now)
    assert worker_for(pipeline).run(control_plane.claim_next("w1")) is JobOutcome.CANCELLED
    assert row(job.pk)["status"] == JobStatus.CANCELLED
    snapshot = AnalysisSnapshot.objects.get()
    assert (snapshot.state, snapshot.content_hash, snapshot.failure_code) == (SnapshotState.FAILED, "", CANCELLED_CODE)


def test_a_cancellation_after_the_seal_loses_to_the_sealed_snapshot(db, control_plane, worker_for, make_job, monkeypatch):
    job = make_job()
    real_checkpoint = faults.checkpoint

    def checkpoint(name):
        if name == "after-seal":
            control_plane.request_cancel(job.pk)
        real_checkpoint(name)

    monkeypatch.setattr(faults, "checkpoint", checkpoint)
    assert worker_for(StagedPipeline("one")).run(control_plane.claim_next("w1")) is JobOutcome.COMPLETED
    after = row(job.pk)
    assert (after["status"], after["cancel_requested"]) == (JobStatus.COMPLETED, True)
    assert AnalysisSnapshot.objects.get().state == SnapshotState.SEALED


def test_a_failure_racing_a_cancellation_ends_the_job_cancelled(db, control_plane, worker_for, make_job):
    job = make_job()

    def cancel_then_fail(state, check):
        control_plane.request_cancel(job.pk)
        raise RuntimeError("boom")

    pipeline = StagedPipeline("one", actions={"one": cancel_then_fail})
    assert worker_for(pipeline).run(control_plane.claim_next("w1")) is JobOutcome.CANCELLED
    after = row(job.pk)
    assert (after["status"], after["error_code"]) == (JobStatus.CANCELLED, CANCELLED_CODE)
    assert control_plane.claim_next("w2") is None


# -- losing the lease ------------------------------------------------------------------------------------------


def test_a_worker_whose_lease_was_reclaimed_mid_stage_writes_nothing_more(db, control_plane, worker_for, make_job, fake_clock):
    job = make_job()
    after_reclaim = {}

    def lose_the_lease(state, check):
        fake_clock.advance(LEASE + 1)  # the worker stalled past its lease; the sweeper takes the job
        [expired] = control_plane.expired_leases()
        assert control_plane.reclaim(expired, "sweeper") is not None
        fake_clock.advance(1)
        after_reclaim.update(job=row(job.pk), snapshots=snapshot_rows())

    pipeline = StagedPipeline("one", "two", actions={"one": lose_the_lease})
    assert worker_for(pipeline).run(control_plane.claim_next("w1")) is JobOutcome.LOST
    assert pipeline.ran == ["one"]
    assert row(job.pk) == after_reclaim["job"]
    assert snapshot_rows() == after_reclaim["snapshots"]
    assert after_reclaim["snapshots"][0]["state"] == SnapshotState.BUILDING  # the new owner decides its fate


def test_a_worker_whose_lease_was_lost_in_its_last_stage_never_seals(db, control_plane, worker_for, make_job, fake_clock):
    job = make_job()

    def lose_the_lease(state, check):
        fake_clock.advance(LEASE + 1)
        control_plane.reclaim(control_plane.expired_leases()[0], "sweeper")

    pipeline = StagedPipeline("only", actions={"only": lose_the_lease})
    assert worker_for(pipeline).run(control_plane.claim_next("w1")) is JobOutcome.LOST
    assert (row(job.pk)["status"], row(job.pk)["worker_id"]) == (JobStatus.RUNNING, "sweeper")
    assert AnalysisSnapshot.objects.get().state == SnapshotState.BUILDING


# -- the heartbeat ---------------------------------------------------------------------------------------------


def test_a_heartbeat_beat_renews_the_lease(db, control_plane, make_job, fake_clock):
    make_job()
    lease = control_plane.claim_next("w1")
    flags = _Flags()
    fake_clock.advance(20)
    Heartbeat(control_plane, 3600).beat(lease, flags)
    assert row(lease.job_id)["lease_expires_at"] == fake_clock.now() + dt.timedelta(seconds=LEASE)
    flags.check()  # nothing raised: carry on


def test_a_heartbeat_beat_raises_the_cancel_flag(db, control_plane, make_job):
    make_job()
    lease = control_plane.claim_next("w1")
    flags = _Flags()
    control_plane.request_cancel(lease.job_id)
    Heartbeat(control_plane, 3600).beat(lease, flags)
    assert flags.cancel.is_set() and not flags.lost.is_set()
    with pytest.raises(JobCancelled):
        flags.check()


def test_a_heartbeat_beat_raises_the_lost_flag_after_a_reclaim(db, control_plane, make_job, fake_clock):
    make_job()
    lease = control_plane.claim_next("w1")
    fake_clock.advance(LEASE + 1)
    control_plane.reclaim(control_plane.expired_leases()[0], "sweeper")
    before = row(lease.job_id)
    flags = _Flags()
    Heartbeat(control_plane, 3600).beat(lease, flags)
    assert flags.lost.is_set()
    with pytest.raises(LeaseLost):
        flags.check()
    assert row(lease.job_id) == before


def test_one_heartbeat_thread_serves_every_job_of_a_worker_until_it_closes(db, control_plane, worker_for, make_job):
    worker = worker_for(StagedPipeline("only"))
    threads = []
    for _ in range(3):
        make_job()
        assert worker.run(control_plane.claim_next("w1")) is JobOutcome.COMPLETED
        threads.append(worker.heartbeat._thread)
    assert threads[0] is threads[1] is threads[2] and threads[0].is_alive()
    worker.close()
    assert not threads[0].is_alive()


def test_a_held_lease_is_renewed_every_interval_until_released(transactional_db, control_plane, make_job, fake_clock):
    make_job()
    lease = control_plane.claim_next("w1")
    beats = threading.Semaphore(0)
    heartbeat = Heartbeat(control_plane, 0.001, after_beat=beats.release)
    fake_clock.advance(20)
    try:
        heartbeat.hold(lease, _Flags())
        assert beats.acquire(timeout=30) and beats.acquire(timeout=30)  # two beats, not one
        heartbeat.release()
        assert row(lease.job_id)["lease_expires_at"] == fake_clock.now() + dt.timedelta(seconds=LEASE)
    finally:
        heartbeat.close()


def test_release_waits_out_a_beat_under_way(transactional_db, control_plane, make_job):
    make_job()
    lease = control_plane.claim_next("w1")
    entered, finish, released = threading.Event(), threading.Event(), threading.Event()
    renew = control_plane.renew

    def renew_when_told(lease):
        entered.set()
        assert finish.wait(30), "the test never let the beat finish"
        return renew(lease)

    control_plane.renew = renew_when_told
    heartbeat = Heartbeat(control_plane, 0.001)
    try:
        heartbeat.hold(lease, _Flags())
        assert entered.wait(30)
        releaser = threading.Thread(target=lambda: (heartbeat.release(), released.set()))
        releaser.start()
        assert not released.wait(0.2), "release returned while a beat for the lease was still writing"
        finish.set()
        releaser.join(30)
        assert released.is_set()
    finally:
        finish.set()
        heartbeat.close()


def test_close_stops_a_heartbeat_that_was_about_to_look_for_a_job_when_it_closed(control_plane):
    # The thread has passed its loop's closed check and is about to take the lock for its look; close() then
    # notifies before anyone waits. The look must see the close, not wait out its interval (an hour here).
    class Paused(Heartbeat):
        def _next_due(self):
            if not about_to_look.is_set():
                about_to_look.set()
                assert look.wait(30), "the test never let the look go on"
            return super()._next_due()

    about_to_look, look = threading.Event(), threading.Event()
    heartbeat = Paused(control_plane, 3600)
    lease = JobLease(job_id=1, worker_id="w1", attempt=1, expires_at=control_plane.clock.now())
    heartbeat.hold(lease, _Flags())
    heartbeat.release()  # no job held when it looks
    assert about_to_look.wait(30)
    closer = threading.Thread(target=heartbeat.close)
    with heartbeat._changed:
        closer.start()
        assert heartbeat._changed.wait_for(lambda: heartbeat._closed, timeout=30)  # close() has notified
    look.set()
    closer.join(30)
    assert not closer.is_alive(), "close() waited out the heartbeat's interval"


# -- another thread acts while a stage runs (each thread on its own connection) -------------------------------


def run_in_thread(worker, lease):
    """Start ``worker.run(lease)`` on a thread of its own; return the thread and where its outcome lands."""
    result = {}

    def target():
        try:
            result["outcome"] = worker.run(lease)
        except BaseException as error:
            result["error"] = error
        finally:
            connections.close_all()

    thread = threading.Thread(target=target)
    thread.start()
    return thread, result


def blocking_stage():
    """A stage action that says it has started, then waits until the test releases it."""
    entered, release = threading.Event(), threading.Event()

    def action(state, check):
        entered.set()
        assert release.wait(30), "the test never released the stage"

    return action, entered, release


def test_a_cancellation_from_another_connection_mid_stage_is_honoured(transactional_db, control_plane, worker_for, make_job):
    job = make_job()
    action, entered, release = blocking_stage()
    pipeline = StagedPipeline("long", "after", actions={"long": action})
    thread, result = run_in_thread(worker_for(pipeline), control_plane.claim(job.pk, "w1"))
    try:
        assert entered.wait(30)
        assert control_plane.request_cancel(job.pk).value == "requested"
    finally:
        release.set()
        thread.join()
    assert result == {"outcome": JobOutcome.CANCELLED}
    assert pipeline.ran == ["long"]
    after = row(job.pk)
    assert (after["status"], AnalysisSnapshot.objects.get(pk=after["snapshot_id"]).state) == (
        JobStatus.CANCELLED, SnapshotState.FAILED,
    )


def test_a_reclaim_from_another_connection_mid_stage_leaves_the_worker_writing_nothing(
    transactional_db, control_plane, worker_for, make_job, fake_clock
):
    job = make_job()
    action, entered, release = blocking_stage()
    pipeline = StagedPipeline("long", "after", actions={"long": action})
    thread, result = run_in_thread(worker_for(pipeline), control_plane.claim(job.pk, "w1"))
    try:
        assert entered.wait(30)
        fake_clock.advance(LEASE + 1)
        sweeper = DatabaseControlPlane(clock=fake_clock, lease_seconds=LEASE)
        [expired] = [e for e in sweeper.expired_leases() if e.job_id == job.pk]
        taken = sweeper.reclaim(expired, "sweeper")
        assert taken is not None
        job_after_reclaim, snapshots_after_reclaim = row(job.pk), snapshot_rows()
    finally:
        release.set()
        thread.join()
    assert result == {"outcome": JobOutcome.LOST}
    assert row(job.pk) == job_after_reclaim
    assert snapshot_rows() == snapshots_after_reclaim
    assert sweeper.renew(taken).renewed


def test_the_heartbeat_stops_a_long_stage_when_cancellation_is_requested(
    transactional_db, control_plane, make_job, make_worker
):
    job = make_job()
    entered = threading.Event()
    ended_by = []

    def long_stage(state, check):
        entered.set()
        deadline = time.monotonic() + 30  # a safety net only: the test waits for the flag, not for time
        while time.monotonic() < deadline:
            try:
                check()
            except JobCancelled:
                ended_by.append("check")
                raise
            time.sleep(0.005)
        ended_by.append("deadline")

    pipeline = StagedPipeline("long", "after", actions={"long": long_stage})
    worker = make_worker(pipeline, heartbeat_seconds=0.01)
    thread, result = run_in_thread(worker, control_plane.claim(job.pk, "w1"))
    try:
        assert entered.wait(30)
        control_plane.request_cancel(job.pk)
    finally:
        thread.join()
    assert ended_by == ["check"]
    assert result == {"outcome": JobOutcome.CANCELLED}
    assert pipeline.ran == ["long"]
    assert row(job.pk)["status"] == JobStatus.CANCELLED
