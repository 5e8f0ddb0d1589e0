"""
The runner against a real database: the poll loop, the sweep's cadence and outcomes, failure isolation,
shutdown and worker identity. Time is the fake clock's; the pipeline is a test double whose stages act at the
moment the test needs (raise, ask the runner to stop, wait to be handed back).
"""

import datetime as dt
import logging
import os
import re
import threading
import time

import pytest
from django.db import OperationalError, connections

from analysis_jobs import runner as runner_module
from analysis_jobs.control_plane import CANCELLED_CODE, HANDED_BACK_CODE, DatabaseControlPlane
from analysis_jobs.decisions import STALE_CODE
from analysis_jobs.models import AnalysisJob, JobStatus, SnapshotState
from analysis_jobs.pipeline import Stage
from analysis_jobs.runner import AnalysisWorkerRunner, WorkerExit, new_worker_id
from tests.documents_support import stored_document

LEASE = 30
RETRY_BASE = 2


class Pipeline:
    """One stage named ``work`` that runs ``action(state, check)`` if given; records the sources it saw."""

    def __init__(self, action=None):
        self.seen = []
        self.action = action
        self.stages = (Stage("work", self._run),)

    def _run(self, state, check):
        self.seen.append(state.source)
        if self.action is not None:
            self.action(state, check)

    def document(self, state):
        return {"schema": "test", "source": state.source}

    def identity(self, state):
        return ""


@pytest.fixture
def build_runner(control_plane, fake_clock, make_worker, settings):
    settings.ANALYSIS_JOBS = dict(settings.ANALYSIS_JOBS, RETRY_BASE_SECONDS=RETRY_BASE, RETRY_CAP_SECONDS=60)

    def build(pipeline=None, **options):
        worker = make_worker(pipeline or Pipeline(), retry_base=RETRY_BASE, retry_cap=60)
        options = dict(dict(worker_id="runner-1", poll_interval=1, sweep_interval=5, burst=True), **options)
        return AnalysisWorkerRunner(control_plane=control_plane, worker=worker, clock=fake_clock, **options)

    return build


def statuses():
    return dict(AnalysisJob.objects.values_list("pk", "status"))


def abandoned(control_plane, make_job, fake_clock, *, worker_id="dead-worker", spent=0, building=True, sealed=False, cancel=False, lapse=True, **fields):
    """A job a worker claimed (and began, sealed, or was asked to cancel) and then stopped renewing.

    It is built with the real transitions, so it is exactly what a killed worker leaves; ``spent`` attempts
    were used before this one. With ``lapse`` the clock then moves past the lease.
    """
    job = make_job(attempt=spent, **fields)
    lease = control_plane.claim(job.pk, worker_id)
    if building or sealed:
        snapshot_id = control_plane.begin_snapshot(lease)
        if sealed:
            assert control_plane.seal(lease, snapshot_id=snapshot_id, document=stored_document("{}"))
    if cancel:
        control_plane.request_cancel(job.pk, by="test")
    if lapse:
        fake_clock.advance(LEASE + 1)
    return job, lease


# -- the loop --------------------------------------------------------------------------------------------------


def test_a_backlog_drains_without_the_clock_moving(db, build_runner, make_job, fake_clock):
    jobs = [make_job() for _ in range(5)]
    start = fake_clock.now()
    report = build_runner().run()
    assert report.outcomes == {"completed": 5}
    assert set(statuses().values()) == {JobStatus.COMPLETED}
    # The only thing that moves the fake clock is the idle wait; a draining backlog never waits.
    assert fake_clock.now() == start
    assert len(jobs) == 5


def test_burst_mode_exits_when_nothing_is_eligible_even_with_jobs_in_backoff(db, build_runner, make_job, fake_clock):
    later = make_job(next_attempt_at=fake_clock.now() + dt.timedelta(seconds=60))
    report = build_runner().run()
    assert report.jobs == 0
    assert AnalysisJob.objects.get(pk=later.pk).status == JobStatus.QUEUED


def test_an_idle_runner_waits_a_poll_interval_between_polls(db, build_runner, make_job, fake_clock):
    runner = build_runner(burst=False, poll_interval=7, max_jobs=1)
    job = make_job(next_attempt_at=fake_clock.now() + dt.timedelta(seconds=20))
    start = fake_clock.now()
    report = runner.run()
    assert report.outcomes == {"completed": 1}
    assert AnalysisJob.objects.get(pk=job.pk).status == JobStatus.COMPLETED
    # Polls at 0, 7, 14 find nothing; the one at 21 finds the job whose backoff ended at 20.
    assert fake_clock.now() - start == dt.timedelta(seconds=21)


def test_polls_keep_to_the_poll_interval_however_long_each_takes(db, control_plane, build_runner, make_job, fake_clock, monkeypatch):
    claim_next = control_plane.claim_next

    def slow_claim_next(worker_id):
        lease = claim_next(worker_id)
        fake_clock.advance(2)  # the poll's statements took 2 s
        return lease

    monkeypatch.setattr(control_plane, "claim_next", slow_claim_next)
    runner = build_runner(burst=False, poll_interval=7, max_jobs=1)
    job = make_job(next_attempt_at=fake_clock.now() + dt.timedelta(seconds=20))
    start = fake_clock.now()
    assert runner.run().outcomes == {"completed": 1}
    # Polls start at 0, 7, 14 and 21, not 0, 9, 18 and 27: a job waits at most a poll interval.
    assert AnalysisJob.objects.get(pk=job.pk).started_at - start == dt.timedelta(seconds=21)


def test_max_jobs_stops_the_runner_with_the_rest_still_queued(db, build_runner, make_job):
    jobs = [make_job() for _ in range(4)]
    report = build_runner(burst=False, max_jobs=3).run()
    assert report.jobs == 3
    assert [statuses()[job.pk] for job in jobs] == [JobStatus.COMPLETED] * 3 + [JobStatus.QUEUED]


# -- the sweep's cadence ---------------------------------------------------------------------------------------


def test_the_sweep_runs_once_per_sweep_interval_of_clock_time_not_once_per_job(
    db, control_plane, build_runner, make_job, fake_clock, monkeypatch
):
    abandoned(control_plane, make_job, fake_clock)  # a lapsed lease, so no claim poll can stand in for the scan
    runner = build_runner(sweep_interval=5)
    swept_at = []
    monkeypatch.setattr(runner, "sweep", lambda now=None: swept_at.append(now))
    for _ in range(4):
        make_job()
    runner.run()
    assert swept_at == [fake_clock.now()]  # four jobs and a last empty poll, all at one instant: one sweep

    start = fake_clock.now()
    for offset in (1, 4.9, 5, 6, 9.9, 10.5):
        fake_clock.advance(offset - (fake_clock.now() - start).total_seconds())
        runner._sweep_if_due()
    assert [(t - start).total_seconds() for t in swept_at[1:]] == [5, 10.5]


def test_an_idle_runner_sweeps_on_the_clock_while_it_polls(db, control_plane, build_runner, make_job, fake_clock, monkeypatch):
    abandoned(control_plane, make_job, fake_clock)  # a lapsed lease the (stubbed) sweep leaves where it is
    runner = build_runner(burst=False, poll_interval=2, sweep_interval=5)
    swept_at = []
    start = fake_clock.now()

    def sweep(now=None):
        swept_at.append((now - start).total_seconds())
        if len(swept_at) == 3:
            runner._stopping.set()

    monkeypatch.setattr(runner, "sweep", sweep)
    runner.run()
    # Polls at 0, 2, 4, 6, 8, 10: the sweep is due at 0, then at the first poll 5 s or more after the last sweep.
    assert swept_at == [0, 6, 12]


@pytest.mark.postgres_only
def test_a_claim_poll_that_saw_no_lapsed_lease_stands_in_for_the_sweeps_scan(db, build_runner, fake_clock, monkeypatch):
    runner = build_runner(burst=False, poll_interval=2, sweep_interval=5)
    swept_at = []
    monkeypatch.setattr(runner, "sweep", lambda now=None: swept_at.append(now))
    start = fake_clock.now()
    for _ in range(6):  # polls at 0, 2, ... 10: nothing queued, nothing lapsed
        runner.run_once()
        runner._sweep_if_due()
        fake_clock.advance(2)
    assert swept_at == []
    # The poll at 0 stood in for the first sweep, the one at 6 s for the sweep due at 5 s; the next is due at 11 s.
    assert runner._next_sweep_at == start + dt.timedelta(seconds=11)


@pytest.mark.postgres_only
def test_a_claim_poll_that_saw_a_lapsed_lease_lets_the_due_sweep_rescue_it(db, control_plane, build_runner, make_job, fake_clock):
    runner = build_runner(burst=False, poll_interval=2, sweep_interval=5)
    runner.run_once()
    runner._sweep_if_due()  # nothing lapsed yet: the poll stood in for the sweep due now
    job, _ = abandoned(control_plane, make_job, fake_clock)  # the clock moves past the lease: the sweep is due
    assert runner.run_once() is False and control_plane.last_lapsed_check.any_lapsed
    runner._sweep_if_due()
    job.refresh_from_db()
    assert (job.status, job.error_code) == (JobStatus.QUEUED, STALE_CODE)


# -- the sweep's outcomes --------------------------------------------------------------------------------------


def test_a_lapsed_job_with_a_sealed_snapshot_is_healed_to_completed(db, control_plane, build_runner, make_job, fake_clock):
    job, _ = abandoned(control_plane, make_job, fake_clock, sealed=True)
    report = build_runner().sweep()
    assert (report.healed, report.reclaimed) == (1, 1)
    job.refresh_from_db()
    assert (job.status, job.progress, job.attempt, job.error_code) == (JobStatus.COMPLETED, 100, 1, "")
    assert job.lease_expires_at is None and job.completed_at == fake_clock.now()
    assert (job.snapshot.state, job.snapshot.content_hash) == (SnapshotState.SEALED, stored_document().content_hash)


def test_a_sealed_snapshot_wins_over_a_cancellation_asked_after_it(db, control_plane, build_runner, make_job, fake_clock):
    job, _ = abandoned(control_plane, make_job, fake_clock, sealed=True, cancel=True)
    report = build_runner().sweep()
    assert (report.healed, report.cancelled) == (1, 0)
    assert AnalysisJob.objects.get(pk=job.pk).status == JobStatus.COMPLETED


def test_a_lapsed_job_whose_cancellation_was_asked_is_cancelled(db, control_plane, build_runner, make_job, fake_clock):
    job, _ = abandoned(control_plane, make_job, fake_clock, cancel=True)
    report = build_runner().sweep()
    assert (report.cancelled, report.reclaimed) == (1, 1)
    job.refresh_from_db()
    assert (job.status, job.error_code) == (JobStatus.CANCELLED, CANCELLED_CODE)
    assert (job.snapshot.state, job.snapshot.failure_code) == (SnapshotState.FAILED, CANCELLED_CODE)


def test_a_lapsed_job_with_attempts_left_is_requeued_as_stale_with_backoff(db, control_plane, build_runner, make_job, fake_clock):
    job, _ = abandoned(control_plane, make_job, fake_clock, max_attempts=3)
    now = fake_clock.now()
    report = build_runner().sweep()
    assert (report.requeued, report.reclaimed) == (1, 1)
    job.refresh_from_db()
    assert (job.status, job.attempt, job.worker_id, job.lease_expires_at) == (JobStatus.QUEUED, 1, "", None)
    assert job.error_code == STALE_CODE
    # The first retry waits the base delay, jittered over its upper half.
    assert now + dt.timedelta(seconds=RETRY_BASE / 2) <= job.next_attempt_at <= now + dt.timedelta(seconds=RETRY_BASE)
    assert (job.snapshot.state, job.snapshot.failure_code) == (SnapshotState.FAILED, STALE_CODE)
    assert control_plane.next_eligible_job_id() is None  # hidden until the backoff ends
    fake_clock.advance(RETRY_BASE)
    assert control_plane.next_eligible_job_id() == job.pk


def test_a_lapsed_job_at_its_attempt_limit_fails(db, control_plane, build_runner, make_job, fake_clock):
    job, _ = abandoned(control_plane, make_job, fake_clock, spent=2, max_attempts=3)
    report = build_runner().sweep()
    assert (report.failed, report.reclaimed) == (1, 1)
    job.refresh_from_db()
    assert (job.status, job.attempt, job.error_code) == (JobStatus.FAILED, 3, STALE_CODE)
    assert "no attempts left" in job.error_message
    assert job.snapshot.state == SnapshotState.FAILED


def test_a_live_lease_is_left_alone(db, control_plane, build_runner, make_job, fake_clock):
    job, _ = abandoned(control_plane, make_job, fake_clock, lapse=False)
    fake_clock.advance(LEASE - 1)
    report = build_runner().sweep()
    assert (report.reclaimed, report.missed) == (0, 0)
    job.refresh_from_db()
    assert (job.status, job.worker_id) == (JobStatus.RUNNING, "dead-worker")


def test_a_lease_renewed_between_the_scan_and_the_reclaim_counts_as_missed(db, control_plane, build_runner, make_job, fake_clock, monkeypatch):
    job, owner = abandoned(control_plane, make_job, fake_clock, worker_id="slow-worker")
    runner = build_runner()
    scan = runner.control_plane.expired_leases

    def scan_then_the_owner_renews(now=None):
        seen = scan(now)
        assert runner.control_plane.renew(owner).renewed
        return seen

    monkeypatch.setattr(runner.control_plane, "expired_leases", scan_then_the_owner_renews)
    report = runner.sweep()
    assert (report.missed, report.reclaimed) == (1, 0)
    job.refresh_from_db()
    assert (job.status, job.worker_id, job.attempt) == (JobStatus.RUNNING, "slow-worker", 1)


def test_the_sweep_logs_what_it_did(db, control_plane, build_runner, make_job, fake_clock, caplog):
    abandoned(control_plane, make_job, fake_clock, sealed=True, lapse=False)
    abandoned(control_plane, make_job, fake_clock)
    with caplog.at_level(logging.INFO, logger="analysis_jobs.runner"):
        build_runner().sweep()
    assert "sweep worker=runner-1 healed=1 cancelled=0 requeued=1 failed=0 missed=0" in caplog.messages


def test_a_stale_job_is_rescued_by_the_running_loop(db, control_plane, build_runner, make_job, fake_clock):
    job, _ = abandoned(control_plane, make_job, fake_clock)
    fresh = make_job()
    report = build_runner(burst=False, max_jobs=2, sweep_interval=1).run()
    assert report.outcomes == {"completed": 2}
    job.refresh_from_db()
    assert (job.status, job.attempt) == (JobStatus.COMPLETED, 2)  # the stale attempt was spent, the retry won
    assert statuses()[fresh.pk] == JobStatus.COMPLETED


# -- failure isolation -----------------------------------------------------------------------------------------


def test_a_job_whose_pipeline_raises_does_not_stop_the_loop(db, build_runner, make_job, source_dir, tmp_path):
    bad_source = tmp_path / "bad"
    bad_source.mkdir()

    def fail_on_bad(state, check):
        if state.source == str(bad_source):
            raise RuntimeError("boom")

    bad = make_job(source=str(bad_source))
    good = make_job()
    report = build_runner(Pipeline(fail_on_bad)).run()
    assert report.outcomes == {"requeued": 1, "completed": 1}
    bad.refresh_from_db()
    assert (bad.status, bad.error_code, bad.error_message) == (JobStatus.QUEUED, "RI-JOB-FAILED", "RuntimeError: boom")
    assert statuses()[good.pk] == JobStatus.COMPLETED


# A recovery closes every connection; inside the test's transaction that would poison the rest of the test, so
# these run on committed data (transactional_db), as a real worker does.


def test_an_error_escaping_the_worker_is_logged_and_the_loop_carries_on(transactional_db, build_runner, make_job, monkeypatch, caplog):
    runner = build_runner()
    first, second = make_job(), make_job()
    real_run = runner.worker.run
    calls = []

    def run(lease):
        calls.append(lease.job_id)
        if len(calls) == 1:
            raise RuntimeError("a bug in the worker")
        return real_run(lease)

    monkeypatch.setattr(runner.worker, "run", run)
    with caplog.at_level(logging.ERROR, logger="analysis_jobs.runner"):
        report = runner.run()
    assert report.outcomes == {"completed": 1}
    assert calls == [first.pk, second.pk]
    assert statuses() == {first.pk: JobStatus.RUNNING, second.pk: JobStatus.COMPLETED}  # the sweep rescues the first
    assert [r.getMessage() for r in caplog.records] == ["worker id=runner-1 event=loop_error"]
    assert caplog.records[0].exc_info[0] is RuntimeError


def test_a_database_that_drops_the_connection_is_reconnected_and_the_loop_carries_on(
    transactional_db, build_runner, make_job, fake_clock, monkeypatch, caplog
):
    runner = build_runner()
    job = make_job()
    real_claim_next = runner.control_plane.claim_next
    dropped = []

    def claim_next(worker_id, now=None, **kwargs):
        if not dropped:
            # The server went away: the driver's connection is dead under Django's feet.
            dropped.append(connections["default"].connection)
            connections["default"].connection.close()
            raise OperationalError("server closed the connection unexpectedly")
        return real_claim_next(worker_id, now, **kwargs)

    monkeypatch.setattr(runner.control_plane, "claim_next", claim_next)
    start = fake_clock.now()
    with caplog.at_level(logging.WARNING, logger="analysis_jobs.runner"):
        report = runner.run()
    assert report.outcomes == {"completed": 1}
    assert statuses()[job.pk] == JobStatus.COMPLETED
    assert connections["default"].connection is not dropped[0]  # a fresh connection did the work
    assert "worker id=runner-1 event=database_unavailable error=OperationalError" in caplog.messages
    assert fake_clock.now() - start == dt.timedelta(seconds=1)  # it waited one poll interval before retrying


# -- shutdown --------------------------------------------------------------------------------------------------


def test_request_stop_stops_claiming_and_the_job_that_finishes_within_grace_completes(db, build_runner, make_job):
    holder = {}
    runner = build_runner(Pipeline(lambda state, check: holder["runner"].request_stop()), burst=False, grace=600)
    holder["runner"] = runner
    first, second = make_job(), make_job()
    report = runner.run()
    assert report.outcomes == {"completed": 1}
    assert statuses() == {first.pk: JobStatus.COMPLETED, second.pk: JobStatus.QUEUED}
    assert not runner._grace_timer.is_alive()  # a finished run leaves no timer behind to hand anything back


def wait_to_be_handed_back(state, check):
    """A stage that outlives any grace: it runs until its ``check()`` says the job was taken from it."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        check()
        time.sleep(0.005)
    raise AssertionError("the job was never handed back")


def test_a_job_that_outlives_the_grace_is_handed_back_with_its_attempt_refunded(transactional_db, build_runner, make_job, fake_clock):
    holder = {}

    def stop_then_keep_going(state, check):
        holder["runner"].request_stop()
        wait_to_be_handed_back(state, check)

    runner = build_runner(Pipeline(stop_then_keep_going), burst=False, grace=0)
    holder["runner"] = runner
    job = make_job()
    report = runner.run()
    assert report.outcomes == {"lost": 1}  # the grace timer handed it back; the worker then wrote nothing
    job.refresh_from_db()
    assert (job.status, job.attempt, job.worker_id, job.next_attempt_at) == (JobStatus.QUEUED, 0, "", None)
    assert (job.snapshot.state, job.snapshot.failure_code) == (SnapshotState.FAILED, HANDED_BACK_CODE)
    # Another worker takes it at once, without waiting for a lease to lapse, and spends the first attempt.
    lease = DatabaseControlPlane(clock=fake_clock).claim_next("other-worker")
    assert (lease.job_id, lease.attempt) == (job.pk, 1)


def test_a_second_stop_request_raises_worker_exit(db, build_runner):
    runner = build_runner(grace=600)
    runner.request_stop()
    with pytest.raises(WorkerExit):
        runner.request_stop()
    assert runner._grace_timer is None  # a runner that is not running has no job to give a grace


class IdleWaiter:
    """A waiter that says when the runner is idle in it and blocks until the stop event is set."""

    def __init__(self):
        self.idle = threading.Event()
        self.closed = False

    def wait(self, stopping, seconds):
        self.idle.set()
        stopping.wait(10)
        return False

    def wake(self):
        pass

    def close(self):
        self.closed = True


def run_in_thread(runner):
    """Start ``runner.run()`` on another thread; return (thread, outcome dict filled when it ends)."""
    outcome = {"ended": threading.Event()}

    def target():
        try:
            outcome["report"] = runner.run()
        except BaseException as error:  # the assertion is on what escaped
            outcome["error"] = error
        finally:
            outcome["ended"].set()

    thread = threading.Thread(target=target)
    thread.start()
    return thread, outcome


def test_a_stop_from_another_thread_while_idle_ends_the_run_cleanly(transactional_db, build_runner, monkeypatch):
    waiter = IdleWaiter()
    runner = build_runner(burst=False, grace=600, waiter=waiter)
    worker_closed = []
    close_worker = runner.worker.close
    monkeypatch.setattr(runner.worker, "close", lambda: (worker_closed.append(True), close_worker()))
    thread, outcome = run_in_thread(runner)

    class TimerStartedAfterTheRunLeft(threading.Timer):
        """Forces the defect's interleaving: if the stop flag is already set when the grace timer is started,
        start it only after the run has left its loop and ended."""

        def start(self):
            if runner._stopping.is_set():
                outcome["ended"].wait(10)
            super().start()

    monkeypatch.setattr(runner_module.threading, "Timer", TimerStartedAfterTheRunLeft)
    assert waiter.idle.wait(10)
    runner.request_stop()
    thread.join(10)
    assert "error" not in outcome, outcome.get("error")
    assert outcome["report"].jobs == 0
    assert waiter.closed and worker_closed


def test_a_runner_runs_once(db, build_runner):
    runner = build_runner()
    runner.run()
    with pytest.raises(RuntimeError, match="already run: make a new AnalysisWorkerRunner"):
        runner.run()


def test_a_second_thread_cannot_run_a_runner_that_is_running(transactional_db, build_runner):
    waiter = IdleWaiter()
    runner = build_runner(burst=False, grace=600, waiter=waiter)
    thread, outcome = run_in_thread(runner)
    assert waiter.idle.wait(10)
    with pytest.raises(RuntimeError, match="a run going"):
        runner.run()
    runner.request_stop()
    thread.join(10)
    assert "report" in outcome


def test_a_second_signal_mid_job_hands_the_job_back_and_exits(db, build_runner, make_job):
    holder = {}

    def stop_twice(state, check):
        holder["runner"].request_stop()
        holder["runner"].request_stop()

    runner = build_runner(Pipeline(stop_twice), burst=False, grace=600)
    holder["runner"] = runner
    job = make_job()
    with pytest.raises(WorkerExit):
        runner.run()
    job.refresh_from_db()
    assert (job.status, job.attempt, job.worker_id) == (JobStatus.QUEUED, 0, "")


def test_the_grace_timer_with_no_job_running_hands_back_nothing(db, build_runner, make_job):
    runner = build_runner()
    assert runner.worker.hand_back_now() is False


# -- identity --------------------------------------------------------------------------------------------------


def test_a_worker_id_names_the_host_and_the_process_and_is_unique(monkeypatch):
    monkeypatch.setattr(runner_module.socket, "gethostname", lambda: "build-7")
    ids = {new_worker_id() for _ in range(200)}
    assert len(ids) == 200
    for worker_id in ids:
        assert re.fullmatch(rf"build-7:{os.getpid()}:[0-9a-f]{{8}}", worker_id)


def test_a_very_long_hostname_is_cut_so_the_id_fits_the_column(monkeypatch):
    monkeypatch.setattr(runner_module.socket, "gethostname", lambda: "h" * 300)
    worker_id = new_worker_id()
    assert len(worker_id) == AnalysisJob._meta.get_field("worker_id").max_length == 64
    host, pid, random_part = worker_id.rsplit(":", 2)
    assert (set(host), pid, len(random_part)) == ({"h"}, str(os.getpid()), 8)
    assert new_worker_id() != worker_id
