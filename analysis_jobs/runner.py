"""
The runner: a worker's identity, its poll loop, the stale sweep's cadence, and shutdown.

The loop claims the oldest eligible job and runs it, again at once while a backlog drains, and waits only when
nothing is eligible: until a poll interval after that empty poll began, so polls (and a job's wait) keep to the
interval however long a poll takes. Every ``sweep_interval`` seconds it also sweeps: each running job whose
lease lapsed is reclaimed (pinned to what the scan saw) and then healed to completed if its snapshot was sealed,
cancelled if cancellation was asked, or requeued with backoff (``RI-JOB-STALE``) until its attempts are spent.
On PostgreSQL the claim poll also reports whether any lease had lapsed; a poll that saw none stands in for the
sweep's scan, so an idle worker costs one statement per poll interval.

Shutdown: the first SIGTERM/SIGINT stops claiming and lets the current job finish within ``grace`` seconds;
when the grace runs out the job is handed back to the queue (no attempt spent) so another worker takes it at
once. A second signal exits now, handing the job back on the way out. A database that goes away (a server
restart) costs the loop a poll interval and a reconnect, not the process.
"""

import datetime as dt
import logging
import os
import secrets
import signal
import socket
import threading
from dataclasses import dataclass, field

from django.conf import settings
from django.db import connections

from .clock import Clock, SystemClock
from .control_plane import DatabaseControlPlane, JobLease, is_database_unavailable
from .decisions import Requeue, decide_stale
from .models import AnalysisJob, SnapshotState
from .notifications import ListenWaiter, PollWaiter, waiter_for
from .worker import AnalysisWorker, JobOutcome

logger = logging.getLogger(__name__)

WORKER_ID_LENGTH = 64


def new_worker_id() -> str:
    """Return an id unique to this worker: host, pid and a random part, at most 64 characters."""
    suffix = f":{os.getpid()}:{secrets.token_hex(4)}"
    return socket.gethostname()[: WORKER_ID_LENGTH - len(suffix)] + suffix


class WorkerExit(BaseException):
    """A second shutdown signal: leave now."""


@dataclass
class SweepReport:
    healed: int = 0
    cancelled: int = 0
    requeued: int = 0
    failed: int = 0
    missed: int = 0  # expired leases that moved before the reclaim (renewed, or taken by another sweeper)

    @property
    def reclaimed(self) -> int:
        return self.healed + self.cancelled + self.requeued + self.failed


@dataclass
class RunReport:
    outcomes: dict[str, int] = field(default_factory=dict)

    @property
    def jobs(self) -> int:
        return sum(self.outcomes.values())

    def count(self, outcome: JobOutcome) -> None:
        self.outcomes[outcome.value] = self.outcomes.get(outcome.value, 0) + 1


class AnalysisWorkerRunner:
    """Claims and runs jobs until told to stop (or, in burst mode, until nothing is eligible)."""

    def __init__(
        self,
        *,
        control_plane: DatabaseControlPlane | None = None,
        worker: AnalysisWorker | None = None,
        clock: Clock | None = None,
        worker_id: str | None = None,
        poll_interval: float | None = None,
        sweep_interval: float | None = None,
        grace: float | None = None,
        burst: bool = False,
        max_jobs: int | None = None,
        waiter: PollWaiter | ListenWaiter | None = None,
    ):
        config = settings.ANALYSIS_JOBS
        self.clock = clock or SystemClock()
        self.control_plane = control_plane or DatabaseControlPlane(clock=self.clock)
        self.worker = worker or AnalysisWorker(self.control_plane, clock=self.clock)
        # Sweep on the heartbeat's cadence too, so a dead worker's job is rescued even while every live worker
        # is busy with a long analysis.
        self.worker.between_beats = self._sweep_if_due
        self._sweep_lock = threading.Lock()
        self.worker_id = worker_id or new_worker_id()
        self.poll_interval = config["POLL_INTERVAL"] if poll_interval is None else poll_interval
        self.sweep_interval = config["SWEEP_INTERVAL"] if sweep_interval is None else sweep_interval
        self.grace = config["SHUTDOWN_GRACE_SECONDS"] if grace is None else grace
        self.burst = burst
        self.max_jobs = max_jobs
        self.report = RunReport()
        self._stopping = threading.Event()
        self._next_sweep_at: dt.datetime | None = None
        self._grace_timer: threading.Timer | None = None
        # Guards the run's life (not started, running, finished) and the grace timer against request_stop()
        # from another thread or a signal handler; reentrant because that handler runs on the thread it interrupts.
        self._life_lock = threading.RLock()
        self._life = "new"
        # How an idle loop waits: for a wake-up on PostgreSQL (the poll interval is the fallback), else a sleep.
        self.waiter = waiter or waiter_for(self.control_plane.using, self.clock)

    # -- the loop ----------------------------------------------------------------------------------------------

    def run(self) -> RunReport:
        """Run the poll loop until stopped, ``max_jobs`` are done, or (burst) nothing is eligible.

        A runner runs once: its worker's heartbeat is closed when the run ends, so a second run (or a second
        thread's run alongside the first) is refused rather than left holding leases nothing renews.
        """
        with self._life_lock:
            if self._life != "new":
                raise RuntimeError(f"This runner has {'already run' if self._life == 'finished' else 'a run going'}: make a new AnalysisWorkerRunner.")
            self._life = "running"
        logger.info("worker id=%s event=started burst=%s", self.worker_id, self.burst)
        try:
            while not self._stopping.is_set():
                if self.max_jobs is not None and self.report.jobs >= self.max_jobs:
                    break
                polled_at = self.clock.now()
                try:
                    ran = self.run_once()
                    # After the poll, whose lapsed-lease check may make the scan needless.
                    swept = self._sweep_if_due()
                except Exception as error:
                    self._recover(error)
                    continue
                if swept is not None and swept.requeued:
                    continue  # the sweep put jobs back in the queue: look again before calling the queue empty
                if not ran:
                    if self.burst:
                        break
                    self.waiter.wait(self._stopping, self._until_next_poll(polled_at))
        finally:
            with self._life_lock:
                self._life = "finished"  # from here on request_stop() starts no timer
                grace_timer = self._grace_timer
            if grace_timer is not None:
                grace_timer.cancel()
                # A hand-back already under way stops the job first and writes after: let it write before the
                # process may exit, or the job would sit running until its lease lapses.
                grace_timer.join()
            self.waiter.close()
            self.worker.close()
            logger.info("worker id=%s event=stopped jobs=%s", self.worker_id, self.report.jobs)
        return self.report

    def _until_next_poll(self, polled_at: dt.datetime) -> float:
        """Return the wait that starts the next poll a poll interval after this one, however long this one took."""
        elapsed = (self.clock.now() - polled_at).total_seconds()
        return min(self.poll_interval, max(0.0, self.poll_interval - elapsed))

    def run_once(self) -> bool:
        """Claim one eligible job and run it; return False if there was none."""
        lease = self.control_plane.claim_next(self.worker_id)
        if lease is None:
            return False
        outcome = self.worker.run(lease)
        self.report.count(outcome)
        return True

    def _recover(self, error: Exception) -> None:
        if is_database_unavailable(error):
            logger.warning("worker id=%s event=database_unavailable error=%s", self.worker_id, error.__class__.__name__)
        else:
            logger.exception("worker id=%s event=loop_error", self.worker_id)
        connections.close_all()  # the next query opens a fresh connection
        self.clock.wait(self._stopping, max(self.poll_interval, 0.1))

    # -- the stale sweep ---------------------------------------------------------------------------------------

    def _sweep_if_due(self) -> SweepReport | None:
        """Sweep if the sweep interval has passed since the last one; return its report, or None if it did not run."""
        if not self._sweep_lock.acquire(blocking=False):
            return None  # the other thread is sweeping
        try:
            now = self.clock.now()
            if self._next_sweep_at is not None and now < self._next_sweep_at:
                return None
            check = self.control_plane.last_lapsed_check
            if check is not None and not check.any_lapsed and (self._next_sweep_at is None or check.at >= self._next_sweep_at):
                # A claim poll since the sweep came due saw no lapsed lease: that was this sweep, and it was free.
                self._next_sweep_at = check.at + dt.timedelta(seconds=self.sweep_interval)
                return None
            self._next_sweep_at = now + dt.timedelta(seconds=self.sweep_interval)
            return self.sweep(now)
        finally:
            self._sweep_lock.release()

    def sweep(self, now: dt.datetime | None = None) -> SweepReport:
        """Reclaim every job whose lease lapsed and settle it: heal, cancel, requeue or fail."""
        cp = self.control_plane
        now = now or self.clock.now()
        report = SweepReport()
        for expired in cp.expired_leases(now):
            if expired.worker_id == self.worker_id and expired.job_id == self.worker.running_job_id():
                # Our own job, running on this process's main thread: it is alive (its heartbeat called us), and
                # reclaiming it under our own id would leave the main thread's guard matching.
                continue
            lease = cp.reclaim(expired, self.worker_id, now)
            if lease is None:
                report.missed += 1
                continue
            self._settle_reclaimed(lease, now, report)
        if report.reclaimed or report.missed:
            logger.info(
                "sweep worker=%s healed=%s cancelled=%s requeued=%s failed=%s missed=%s",
                self.worker_id, report.healed, report.cancelled, report.requeued, report.failed, report.missed,
            )
        return report

    def _settle_reclaimed(self, lease: JobLease, now: dt.datetime, report: SweepReport) -> None:
        cp = self.control_plane
        cancel_requested, max_attempts, snapshot_state = (
            AnalysisJob.objects.using(cp.using)
            .filter(pk=lease.job_id)
            .values_list("cancel_requested", "max_attempts", "snapshot__state")
            .get()
        )
        # A sealed snapshot wins over a cancellation that came after it, as it does in the worker.
        if snapshot_state == SnapshotState.SEALED:
            if cp.complete(lease):
                report.healed += 1
            return
        if cancel_requested:
            if cp.finish_cancelled(lease):
                report.cancelled += 1
            return
        config = settings.ANALYSIS_JOBS
        decision = decide_stale(
            attempt=lease.attempt,
            max_attempts=max_attempts,
            now=now,
            base=config["RETRY_BASE_SECONDS"],
            cap=config["RETRY_CAP_SECONDS"],
        )
        if cp.apply_failure(lease, decision):
            if isinstance(decision, Requeue):
                report.requeued += 1
            else:
                report.failed += 1

    # -- shutdown ----------------------------------------------------------------------------------------------

    def request_stop(self) -> None:
        """Stop claiming; the job running now gets ``grace`` seconds, then goes back to the queue."""
        with self._life_lock:
            if self._stopping.is_set():
                raise WorkerExit()
            logger.info("worker id=%s event=stopping grace=%s", self.worker_id, self.grace)
            if self._life == "running":
                # Started before the flag is set, so a run that sees the flag and ends finds a started timer.
                timer = threading.Timer(self.grace, self._grace_expired)
                timer.daemon = True
                timer.start()
                self._grace_timer = timer
            self._stopping.set()
        self.waiter.wake()

    def _grace_expired(self) -> None:
        if self.worker.hand_back_now():
            logger.info("worker id=%s event=grace_expired handed_back=1", self.worker_id)

    def install_signal_handlers(self) -> None:
        """Make SIGTERM and SIGINT call ``request_stop`` (the second one exits at once)."""

        def handle(signum, frame):
            self.request_stop()

        signal.signal(signal.SIGTERM, handle)
        signal.signal(signal.SIGINT, handle)
