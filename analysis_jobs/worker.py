"""
The worker: runs one job it owns through the pipeline's stages, then seals and completes it.

At every stage boundary it saves ``stage`` and ``progress`` and renews its lease in one guarded write, which also
reads ``cancel_requested`` back; a heartbeat thread, on its own database connection, renews during a long
stage and raises flags that the stage's ``check()`` turns into an exception between files. How an attempt ends:

- all stages ran: seal the snapshot (commit one), then complete the job (commit two). A sealed snapshot wins
  over a cancellation that arrives after it; if the worker dies between the commits, the sweep heals the job.
- a stage found a sealed snapshot with the same identity (``SnapshotReused``): the job completes pointing at it
  (``complete_with_snapshot``), unless cancellation won first.
- cancellation seen: the job is cancelled (``RI-JOB-CANCELLED``) and its building snapshot failed.
- lease lost: the worker stops and writes nothing more; whoever owns the job now decides.
- shutting down: the runner hands the job back (attempt refunded) from its grace timer, which also marks the
  lease lost here, so the stage stops at its next ``check()`` and writes nothing more.
- any other error: ``decisions.decide_failure`` says requeue with backoff or fail, and the control plane does it.
"""

import enum
import gc
import logging
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from django.conf import settings
from django.db import connections
from django.utils.module_loading import import_string

from . import faults, metrics
from .clock import Clock, SystemClock
from .control_plane import DatabaseControlPlane, JobLease, is_database_unavailable
from .decisions import Fail, decide_failure
from .exceptions import JobCancelled, LeaseLost
from .models import AnalysisJob, JobStatus
from .pipeline import AnalysisState, Pipeline, SnapshotReused, canonical_bytes, default_pipeline

logger = logging.getLogger(__name__)


class JobOutcome(enum.Enum):
    COMPLETED = "completed"
    CANCELLED = "cancelled"
    REQUEUED = "requeued"
    FAILED = "failed"
    LOST = "lost"  # the lease went to someone else; this worker wrote nothing after it noticed


@contextmanager
def _cycle_collector_paused():
    """Pause the cycle collector; resume it (if it was running) on leaving.

    An analysis builds hundreds of thousands of objects (syntax trees, facts, the document) with no reference
    cycles among them, so reference counting frees them all. With the collector on, every few thousand
    allocations it would rescan those gathered so far; resumed while they are still alive, it scans them all
    once more (25 ms of a 530 ms re-analysis of Django's tree). So it is resumed only after the attempt, and
    what it built, are gone.
    """
    running = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if running:
            gc.enable()


class _Flags:
    """What the heartbeat or the runner learned while a stage was running; read by ``check()``."""

    def __init__(self):
        self.cancel = threading.Event()
        self.lost = threading.Event()

    def check(self) -> None:
        if self.lost.is_set():
            raise LeaseLost()
        if self.cancel.is_set():
            raise JobCancelled()


@dataclass(slots=True, eq=False)
class _Held:
    """The lease a heartbeat beats for, the flags its renewals raise, and when its next beat is due."""

    lease: JobLease
    flags: _Flags
    due: float


class Heartbeat:
    """Renews the lease of the job its worker is running, every ``interval`` seconds, from a thread of its own.

    One thread serves all of a worker's jobs (starting one per job cost more than a no-op job itself), and taking
    up or letting go of a job does not wake it (waking it twice per job cost about 8% of the no-op drain rate).
    With no job held the thread looks again every ``interval``: a job held meanwhile is due ``interval`` after it
    was held, which is never before that look. It uses its own database connection, which it closes once no job
    is held. ``after_beat`` runs after each beat.
    """

    def __init__(self, control_plane: DatabaseControlPlane, interval: float, after_beat=None):
        self.control_plane = control_plane
        self.interval = interval
        self.after_beat = after_beat
        self._changed = threading.Condition()  # notified only by ``close``
        self._beating = threading.Lock()  # held while a beat runs, so that ``release`` can wait one out
        self._held: _Held | None = None
        self._closed = False
        self._thread: threading.Thread | None = None

    def hold(self, lease: JobLease, flags: _Flags) -> None:
        """Beat for ``lease`` from ``interval`` seconds from now on; its renewals raise ``flags``."""
        with self._changed:
            self._held = _Held(lease, flags, time.monotonic() + self.interval)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="heartbeat", daemon=True)
                self._thread.start()

    def release(self) -> None:
        """Stop beating for the held lease; a beat under way finishes first, so none lands after this returns."""
        with self._changed:
            self._held = None
        with self._beating:
            pass

    def close(self) -> None:
        """Stop the thread (the worker is done)."""
        with self._changed:
            self._closed = True
            self._changed.notify()
        if self._thread is not None:
            self._thread.join()

    def beat(self, lease: JobLease, flags: _Flags) -> None:
        """Renew ``lease`` once and raise the flags the renewal calls for."""
        faults.checkpoint("during-heartbeat")
        renewal = self.control_plane.renew(lease)
        if renewal.lost:
            logger.warning("job id=%s attempt=%s state=lease_lost worker=%s", lease.job_id, lease.attempt, lease.worker_id)
            flags.lost.set()
        elif renewal.cancel_requested:
            flags.cancel.set()

    def _run(self) -> None:
        connected = False
        try:
            while not self._closed:
                held = self._next_due()
                if held is None:
                    if connected and self._held is None:
                        connections.close_all()  # no job: hold no connection while there is none
                        connected = False
                    continue
                with self._beating:
                    if self._held is not held:
                        continue  # released while the beat came due
                    connected = True
                    try:
                        self.beat(held.lease, held.flags)
                        if self.after_beat is not None:
                            self.after_beat()
                    except Exception:
                        logger.exception("job id=%s event=heartbeat_error worker=%s", held.lease.job_id, held.lease.worker_id)
                    held.due = time.monotonic() + self.interval
        finally:
            connections.close_all()

    def _next_due(self) -> _Held | None:
        """Wait until the held lease's beat is due and return it; None if none is held or it was let go, or closing."""
        with self._changed:
            held = self._held
            if self._closed:
                return None  # closed after the loop looked, before this took the lock: its notify came first
            if held is None or held.flags.lost.is_set():
                self._changed.wait(self.interval)  # a lease held while this waits is due no sooner than it ends
                return None
            while not self._closed and self._held is held:
                delay = held.due - time.monotonic()
                if delay <= 0:
                    return None if held.flags.lost.is_set() else held
                self._changed.wait(delay)
            return None


def _pieces(document) -> Iterable[bytes]:
    """Return a pipeline's document as canonical JSON pieces: a dict is encoded whole, pieces pass as they are."""
    return (canonical_bytes(document),) if isinstance(document, dict) else document


def _checked(pieces: Iterable[bytes], flags: "_Flags") -> Iterator[bytes]:
    """Yield ``pieces``, stopping the attempt between two of them if it must stop (cancelled, lease lost)."""
    for piece in pieces:
        flags.check()
        yield piece


def configured_pipeline() -> Pipeline:
    """Return the pipeline the ``PIPELINE`` setting names (a dotted path to a factory), else the default one."""
    path = settings.ANALYSIS_JOBS.get("PIPELINE")
    return import_string(path)() if path else default_pipeline()


class AnalysisWorker:
    """Runs jobs that a runner claimed, one at a time."""

    def __init__(
        self,
        control_plane: DatabaseControlPlane | None = None,
        *,
        pipeline: Pipeline | None = None,
        clock: Clock | None = None,
        heartbeat_seconds: float | None = None,
        retry_base: float | None = None,
        retry_cap: float | None = None,
    ):
        config = settings.ANALYSIS_JOBS
        self.clock = clock or (control_plane.clock if control_plane else SystemClock())
        self.control_plane = control_plane or DatabaseControlPlane(clock=self.clock)
        self.pipeline = pipeline or configured_pipeline()
        self.heartbeat_seconds = heartbeat_seconds or config["HEARTBEAT_SECONDS"] or self.control_plane.lease_seconds / 3
        self.retry_base = retry_base if retry_base is not None else config["RETRY_BASE_SECONDS"]
        self.retry_cap = retry_cap if retry_cap is not None else config["RETRY_CAP_SECONDS"]
        # Maintenance the runner wants done while a job runs (its stale sweep), called on the heartbeat thread.
        self.between_beats = None
        self.heartbeat = Heartbeat(self.control_plane, self.heartbeat_seconds, after_beat=self._between_beats)
        self._current: tuple[JobLease, _Flags] | None = None
        self._current_lock = threading.Lock()

    def _between_beats(self) -> None:
        if self.between_beats is not None:
            self.between_beats()

    def close(self) -> None:
        """Stop the heartbeat's thread; call it when the worker will run no more jobs."""
        self.heartbeat.close()

    # -- called from other threads -----------------------------------------------------------------------------

    def running_job_id(self) -> int | None:
        """Return the id of the job this worker is running now, if any."""
        with self._current_lock:
            return self._current[0].job_id if self._current else None

    def hand_back_now(self) -> bool:
        """Give the running job back to the queue from another thread and stop this worker writing to it.

        The runner calls this when its shutdown grace runs out; the stage still running finds out at its next
        ``check()`` and every write it tries is refused by the ownership guard.
        """
        with self._current_lock:
            current = self._current
        if current is None:
            return False
        lease, flags = current
        flags.lost.set()
        try:
            return self.control_plane.hand_back(lease)
        finally:
            connections.close_all()

    # -- one job -----------------------------------------------------------------------------------------------

    def run(self, lease: JobLease) -> JobOutcome:
        """Run the job ``lease`` owns to the end of this attempt and return how it ended."""
        flags = _Flags()
        with self._current_lock:
            self._current = (lease, flags)
        faults.checkpoint("after-claim")
        self.heartbeat.hold(lease, flags)
        started = time.monotonic()
        try:
            with _cycle_collector_paused():
                return self._attempt(lease, flags)
        except BaseException:
            # KeyboardInterrupt, SystemExit, a second shutdown signal: give the job back before leaving.
            flags.lost.set()
            try:
                self.control_plane.hand_back(lease)
            except Exception:
                logger.exception("job id=%s event=hand_back_failed worker=%s", lease.job_id, lease.worker_id)
            raise
        finally:
            metrics.ATTEMPT_SECONDS.observe(time.monotonic() - started)
            self.heartbeat.release()
            with self._current_lock:
                self._current = None

    def _attempt(self, lease: JobLease, flags: _Flags) -> JobOutcome:
        cp = self.control_plane
        try:
            snapshot_id = lease.snapshot_id or cp.begin_snapshot(lease)  # claim_next opens it with the claim
            if snapshot_id is None:
                raise LeaseLost()
            inputs = lease.inputs or cp.job_inputs(lease.job_id)
            state = AnalysisState(source=inputs.source, revision=inputs.revision, commit=inputs.commit)
            stages = list(self.pipeline.stages)
            for index, stage in enumerate(stages):
                self._boundary(lease, flags, stage.name, progress=90 * index // max(1, len(stages)))
                stage.run(state, flags.check)
                faults.checkpoint(f"after-stage:{stage.name}")
            document = self.pipeline.document(state)
            summary = document.get("summary") if isinstance(document, dict) else None
            stored = cp.store_document(lease, _checked(_pieces(document), flags))
            if stored is None:
                self._raise_for_lost_or_cancelled(lease)
            if summary is None:
                summary = getattr(self.pipeline, "summary", lambda state: None)(state)
            flags.check()  # the seal's own guard renews the lease and refuses a cancelled job
            if not cp.seal(lease, snapshot_id=snapshot_id, document=stored, identity=self.pipeline.identity(state), summary=summary):
                self._raise_for_lost_or_cancelled(lease)
            self._log_stats(lease, state)
            self._sealed(lease, state, snapshot_id)
            faults.checkpoint("after-seal")
            if not cp.complete(lease):
                logger.warning("job id=%s attempt=%s state=lease_lost_after_seal worker=%s", lease.job_id, lease.attempt, lease.worker_id)
                return JobOutcome.LOST  # sealed: the sweep heals the job to completed
            return JobOutcome.COMPLETED
        except SnapshotReused as reused:
            # The same analysis was sealed before: point the job at it instead of sealing a copy.
            if cp.complete_with_snapshot(lease, reused.snapshot_id):
                return JobOutcome.COMPLETED
            renewal = cp.renew(lease)
            if renewal.renewed and renewal.cancel_requested:
                return JobOutcome.CANCELLED if cp.finish_cancelled(lease) else JobOutcome.LOST
            return JobOutcome.LOST
        except JobCancelled:
            return JobOutcome.CANCELLED if cp.finish_cancelled(lease) else JobOutcome.LOST
        except LeaseLost:
            logger.warning("job id=%s attempt=%s state=abandoned worker=%s", lease.job_id, lease.attempt, lease.worker_id)
            return JobOutcome.LOST
        except Exception as error:
            if is_database_unavailable(error):
                # The database went away under us: nothing can be written now. The lease lapses and the
                # sweep retries the job, spending this attempt.
                logger.warning("job id=%s attempt=%s state=database_unavailable worker=%s", lease.job_id, lease.attempt, lease.worker_id)
                return JobOutcome.LOST
            logger.exception("job id=%s attempt=%s state=error worker=%s", lease.job_id, lease.attempt, lease.worker_id)
            job = AnalysisJob.objects.using(cp.using).filter(pk=lease.job_id).values_list("max_attempts", flat=True).get()
            decision = decide_failure(
                attempt=lease.attempt,
                max_attempts=job,
                error=error,
                now=self.clock.now(),
                base=self.retry_base,
                cap=self.retry_cap,
            )
            if not cp.apply_failure(lease, decision):
                return JobOutcome.LOST
            # A requeue loses to an accepted cancellation and either loses to a seal: report what was written.
            status = AnalysisJob.objects.using(cp.using).filter(pk=lease.job_id).values_list("status", flat=True).get()
            if status in (JobStatus.CANCELLED, JobStatus.COMPLETED):
                return JobOutcome(status)
            if isinstance(decision, Fail):
                return JobOutcome.FAILED
            return JobOutcome.REQUEUED

    def _log_stats(self, lease: JobLease, state: AnalysisState) -> None:
        """Log what the sealed analysis did, as ``key=value`` words, if the pipeline says (``stats(state)``)."""
        stats = getattr(self.pipeline, "stats", None)
        words = " ".join(f"{key}={value}" for key, value in stats(state).items()) if stats else ""
        if words:
            logger.info("job id=%s attempt=%s state=analysed worker=%s %s", lease.job_id, lease.attempt, lease.worker_id, words)

    def _sealed(self, lease: JobLease, state: AnalysisState, snapshot_id: int) -> None:
        """Tell the pipeline its document is sealed (it keeps what its next analysis starts from), if it asks.

        What it keeps is a cache: a failure here is logged, and the job completes all the same.
        """
        sealed = getattr(self.pipeline, "sealed", None)
        if sealed is None:
            return
        try:
            sealed(state, snapshot_id)
        except Exception:
            logger.exception("job id=%s attempt=%s state=basis_not_kept worker=%s", lease.job_id, lease.attempt, lease.worker_id)

    def _boundary(self, lease: JobLease, flags: _Flags, stage: str, *, progress: int) -> None:
        """Save the stage, renew the lease and stop here if the job was cancelled or lost."""
        flags.check()
        renewal = self.control_plane.renew(lease, stage=stage, progress=progress)
        if renewal.lost:
            raise LeaseLost()
        if renewal.cancel_requested:
            raise JobCancelled()
        logger.info("job id=%s attempt=%s stage=%s state=running worker=%s", lease.job_id, lease.attempt, stage, lease.worker_id)

    def _raise_for_lost_or_cancelled(self, lease: JobLease) -> None:
        renewal = self.control_plane.renew(lease)
        if renewal.renewed and renewal.cancel_requested:
            raise JobCancelled()
        raise LeaseLost()
