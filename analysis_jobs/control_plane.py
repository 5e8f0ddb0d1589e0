"""
The control plane: every write to the queue, and nothing else.

State machine (``JobStatus``)::

    queued --claim--> running --complete--> completed
      ^                 |  \\--fail (budget spent, or not retryable)--> failed
      |                 |   \\--finish_cancelled (cancel_requested seen)--> cancelled
      |                 |    \\--complete_with_snapshot (the same analysis was sealed before)--> completed
      +--requeue/hand_back/sweep--+
    queued --request_cancel--> cancelled
    (enqueue of a revision whose identity has a sealed snapshot creates the job completed, never queued)

Lease model. ``claim`` is a compare-and-swap: one ``UPDATE`` whose filter is the guard (``status='queued'``)
and whose row count says who won. The winner holds a lease until ``lease_expires_at`` and proves ownership on
every later write by the guard ``id, status='running', worker_id, attempt``: a worker that lost its lease
matches no row and can never write again. The owner renews at each stage boundary and from a heartbeat thread;
each renewal reads ``cancel_requested`` back inside the same transaction, so a cancellation accepted at any
moment is seen by the next renewal. A worker that stops renewing is found by ``expired_leases``; ``reclaim``
pins the owner and the exact lease instant the scan saw, so a renewal landing between scan and reclaim defeats
it. Reclaiming and handing back spend no attempt; only a claim does.

Every method returns what happened (a lease or None, a ``LeaseRenewal``, a bool); the caller branches on it.
A method that writes several rows does so in one transaction. The three statements every job costs (claim, seal,
completion) are written out as SQL in ``statements.py``; everything else goes through the ORM.
"""

import datetime as dt
import enum
import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Protocol

from django.conf import settings
from django.db import IntegrityError, InterfaceError, OperationalError, connections, transaction
from django.db.models import F, Q

from . import metrics, signals, statements
from .clock import Clock, SystemClock
from .decisions import Fail, Requeue
from .documents import Chunk, ChunkWriter, DocumentStore, StoredDocument
from .exceptions import CancelRefused
from .models import ACTIVE_STATUSES, SEALED_STAGE, AnalysisJob, AnalysisSnapshot, JobStatus, SnapshotState
from .notifications import send_wakeup

logger = logging.getLogger(__name__)

CANCELLED_CODE = "RI-JOB-CANCELLED"
HANDED_BACK_CODE = "RI-JOB-HANDED-BACK"


@dataclass(frozen=True, slots=True)
class JobInputs:
    """What a job asks to analyse: its source, the revision asked for, and the commit that revision named."""

    source: str
    revision: str = ""
    commit: str = ""


@dataclass(frozen=True, slots=True)
class JobLease:
    """Proof of ownership of one attempt of one job, as the claim (or reclaim) left it."""

    job_id: int
    worker_id: str
    attempt: int
    expires_at: dt.datetime
    # The attempt's building snapshot and the job's inputs, when the claim opened and read them (``claim_next``
    # does; after ``claim`` or ``reclaim`` the worker calls ``begin_snapshot`` and reads the job).
    snapshot_id: int | None = None
    inputs: JobInputs | None = None


@dataclass(frozen=True, slots=True)
class LapsedLeaseCheck:
    """What a claim poll saw of the running jobs: whether any lease had lapsed at instant ``at``.

    A poll that saw none answers the question a stale sweep at that instant would have asked, so the runner
    skips its scan (PostgreSQL only: there the check rides on the claim statement and costs no query).
    """

    at: dt.datetime
    any_lapsed: bool


class RenewalOutcome(enum.Enum):
    RENEWED = "renewed"  # the lease was extended; the worker still owns the job
    LOST = "lost"  # the guard matched nothing: another worker or the sweep owns the job now, or it is over
    DEFERRED = "deferred"  # the database could not be written just now (SQLite lock busy, server away)


@dataclass(frozen=True, slots=True)
class LeaseRenewal:
    outcome: RenewalOutcome
    cancel_requested: bool = False

    @property
    def renewed(self) -> bool:
        return self.outcome is RenewalOutcome.RENEWED

    @property
    def lost(self) -> bool:
        return self.outcome is RenewalOutcome.LOST

    @property
    def deferred(self) -> bool:
        return self.outcome is RenewalOutcome.DEFERRED


@dataclass(frozen=True, slots=True)
class ExpiredLease:
    """What the expiry scan saw of one running job: the values ``reclaim`` pins."""

    job_id: int
    worker_id: str
    lease_expires_at: dt.datetime


class CancelOutcome(enum.Enum):
    CANCELLED = "cancelled"  # it was queued and is now cancelled
    REQUESTED = "requested"  # it is running; its worker will stop at its next renewal


class AnalysisControlPlane(Protocol):
    def next_eligible_job_id(self, now: dt.datetime | None = None) -> int | None: ...
    def claim(self, job_id: int, worker_id: str, now: dt.datetime | None = None) -> JobLease | None: ...
    def renew(self, lease: JobLease, now: dt.datetime | None = None, **progress) -> LeaseRenewal: ...
    def expired_leases(self, now: dt.datetime | None = None) -> list[ExpiredLease]: ...
    def reclaim(self, expired: ExpiredLease, worker_id: str, now: dt.datetime | None = None) -> JobLease | None: ...
    def update_owned(self, lease: JobLease, *, require_cancel_not_requested: bool = False, **fields) -> bool: ...
    def request_cancel(self, job_id: int, by: str = "") -> CancelOutcome: ...


def queue_settings() -> dict:
    return settings.ANALYSIS_JOBS


def _attempt_budget(max_attempts: int | None) -> int:
    """Return the attempts a new job may spend: ``max_attempts``, or the setting when it is None."""
    budget = queue_settings()["MAX_ATTEMPTS"] if max_attempts is None else max_attempts
    if not 1 <= budget <= 2**31 - 1:
        raise ValueError(f"A job needs an attempt budget from 1 to {2**31 - 1}, not {budget}.")
    return budget


class DatabaseControlPlane:
    """The control plane on the ``analysis_jobs`` tables of one database."""

    def __init__(self, *, clock: Clock | None = None, lease_seconds: float | None = None, using: str = "default"):
        self.clock = clock or SystemClock()
        self.lease_seconds = float(lease_seconds if lease_seconds is not None else queue_settings()["LEASE_SECONDS"])
        self.using = using
        self.claims_lost = 0  # candidates another worker took between the read and the claim (see claim_next)
        self.last_lapsed_check: LapsedLeaseCheck | None = None  # set by each claim poll that looked (see claim_next)

    # -- reads -------------------------------------------------------------------------------------------------

    def _jobs(self):
        return AnalysisJob.objects.using(self.using)

    def _now(self, now):
        return now if now is not None else self.clock.now()

    def _eligible(self, now):
        return self._jobs().filter(
            Q(next_attempt_at__isnull=True) | Q(next_attempt_at__lte=now),
            status=JobStatus.QUEUED,
            attempt__lt=F("max_attempts"),
        )

    def next_eligible_job_id(self, now: dt.datetime | None = None) -> int | None:
        """Return the oldest queued job whose backoff has passed, without claiming it."""
        return self._eligible(self._now(now)).order_by("created_at", "id").values_list("id", flat=True).first()

    def _lapsed(self, now):
        return self._jobs().filter(status=JobStatus.RUNNING, lease_expires_at__lt=now)

    def expired_leases(self, now: dt.datetime | None = None) -> list[ExpiredLease]:
        """Return the running jobs whose lease has lapsed, as the scan saw them; nothing is claimed."""
        rows = (
            self._lapsed(self._now(now))
            .order_by("lease_expires_at")
            .values_list("id", "worker_id", "lease_expires_at")
        )
        return [ExpiredLease(*row) for row in rows]

    def expired_job_ids(self, now: dt.datetime | None = None) -> list[int]:
        """Return the ids of the running jobs whose lease has lapsed."""
        return [expired.job_id for expired in self.expired_leases(now)]

    # -- enqueue -----------------------------------------------------------------------------------------------

    def enqueue(
        self, source: str, *, revision: str = "", owner=None, max_attempts: int | None = None, commit: str = "",
        reuse_identity: str = "",
    ):
        """Queue an analysis of ``source`` and return ``(job, created)``.

        A source and revision that already have a queued or running job return that job with ``created`` False;
        the partial unique constraint makes this hold when two enqueues race. ``commit`` records what the
        revision resolved to. If ``reuse_identity`` already has a sealed snapshot, the new job is created
        completed and pointing at it, and no worker ever runs it.
        """
        max_attempts = _attempt_budget(max_attempts)
        if reuse_identity:
            reused = self._reusable_snapshot(source, revision, commit, reuse_identity, owner, max_attempts)
            if reused is not None:
                return reused, True
        # A race lost to another enqueue is settled by the next look, which finds its job (or, if that job has
        # finished already, inserts again). Any other refusal (an owner that does not exist) fails every try.
        for _ in range(3):
            existing = self._active_jobs([source], revision)
            if existing:
                return existing[0], False  # one at most: the partial unique constraint
            try:
                with transaction.atomic(using=self.using):
                    # Read inside the transaction, which on SQLite began by taking the write lock: a job is never
                    # older than the moment it could be written, so its wait for the lock (behind a worker's
                    # claim) is not counted as time queued, and the poll interval bounds created_at to claim.
                    now = self.clock.now()
                    job = self._jobs().create(
                        source=source,
                        revision=revision,
                        commit=commit,
                        owner=owner,
                        max_attempts=max_attempts,
                        created_at=now,
                        updated_at=now,
                    )
                    send_wakeup(self.using, str(job.pk))  # delivered when the job commits
            except IntegrityError as error:
                refused = error
                continue
            logger.info("job id=%s event=enqueued max_attempts=%s", job.pk, max_attempts)
            return job, True
        raise refused

    def enqueue_many(
        self, sources, *, revision: str = "", owner=None, max_attempts: int | None = None, commits=None,
        reuse_identities=None, chunk_size: int = 2000,
    ) -> list[tuple[AnalysisJob, bool]]:
        """Queue an analysis of every source in ``sources``, in bulk; return ``(job, created)`` for each, in order.

        Like ``enqueue`` for each source, whose ``commit`` and ``reuse_identity`` are looked up in the mappings
        ``commits`` and ``reuse_identities``: one that already has a queued or running job (or appears twice)
        gets that job with ``created`` False. Each chunk is one transaction and one insert; a chunk that collides
        with a concurrent enqueue is rolled back and queued one source at a time instead.
        """
        max_attempts = _attempt_budget(max_attempts)
        commits, reuse_identities = commits or {}, reuse_identities or {}
        sources = list(sources)
        jobs: dict[str, AnalysisJob] = {}
        created: set[str] = set()
        unique = list(dict.fromkeys(sources))
        for start in range(0, len(unique), chunk_size):
            chunk = unique[start : start + chunk_size]
            reused = self._reuse_many(chunk, revision, commits, reuse_identities, owner, max_attempts)
            jobs.update(reused)
            created.update(reused)
            existing = self._active_jobs([source for source in chunk if source not in reused], revision)
            jobs.update((job.source, job) for job in existing)
            new = [source for source in chunk if source not in jobs]
            if not new:
                continue
            try:
                with transaction.atomic(using=self.using):
                    now = self.clock.now()  # inside the transaction, as in enqueue()
                    shared = {"revision": revision, "owner": owner, "max_attempts": max_attempts, "created_at": now, "updated_at": now}
                    rows = self._insert_queued(shared, new, [commits.get(source, "") for source in new])
                    send_wakeup(self.using, str(rows[0].pk))
            except IntegrityError:
                for source in new:  # a concurrent enqueue took some of these: settle each one the careful way
                    job, was_created = self.enqueue(
                        source, revision=revision, owner=owner, max_attempts=max_attempts, commit=commits.get(source, "")
                    )
                    jobs[source] = job
                    if was_created:
                        created.add(source)
                continue
            for job in rows:
                jobs[job.source] = job
                created.add(job.source)
                logger.info("job id=%s event=enqueued max_attempts=%s", job.pk, max_attempts)
        results, seen = [], set()
        for source in sources:
            results.append((jobs[source], source in created and source not in seen))
            seen.add(source)
        return results

    def _active_jobs(self, sources: list[str], revision: str) -> list[AnalysisJob]:
        """Return the queued or running jobs of ``sources`` at ``revision``: enqueue's check before it inserts."""
        return list(self._jobs().filter(source__in=sources, revision=revision, status__in=ACTIVE_STATUSES))

    def _insert_queued(self, shared: dict, sources: list[str], commits: list[str]) -> list[AnalysisJob]:
        """Insert a queued job for each of ``sources`` at its commit in ``commits``, with the ``shared`` field values."""
        if connections[self.using].vendor == "postgresql":
            return statements.insert_queued(self.using, AnalysisJob(**shared), sources, commits)
        return self._jobs().bulk_create(
            [AnalysisJob(source=source, commit=commit, **shared) for source, commit in zip(sources, commits)]
        )

    # -- claim and lease ---------------------------------------------------------------------------------------

    def claim(self, job_id: int, worker_id: str, now: dt.datetime | None = None, *, seen_attempt: int | None = None):
        """Take job ``job_id`` for ``worker_id`` and return its lease, or None if another worker has it.

        The guard is ``status='queued'`` and still eligible (backoff passed, budget left); with ``seen_attempt``
        it also pins the attempt the caller's candidate read saw. A miss spends nothing.
        """
        now = self._now(now)
        expires = now + dt.timedelta(seconds=self.lease_seconds)
        guard = self._eligible(now).filter(pk=job_id)
        if seen_attempt is not None:
            guard = guard.filter(attempt=seen_attempt)
        changes = dict(
            status=JobStatus.RUNNING,
            worker_id=worker_id,
            lease_expires_at=expires,
            attempt=F("attempt") + 1,
            next_attempt_at=None,
            started_at=now,
            updated_at=now,
            stage="",
            progress=0,
        )
        if seen_attempt is not None:
            if guard.update(**changes) != 1:
                return None
            attempt = seen_attempt + 1
        else:
            with transaction.atomic(using=self.using):
                if guard.update(**changes) != 1:
                    return None
                attempt = self._jobs().filter(pk=job_id).values_list("attempt", flat=True).get()
        metrics.CLAIMS.inc()
        logger.info("job id=%s attempt=%s stage=%s state=claimed worker=%s", job_id, attempt, "", worker_id)
        return JobLease(job_id=job_id, worker_id=worker_id, attempt=attempt, expires_at=expires)

    def claim_next(self, worker_id: str, now: dt.datetime | None = None, *, tries: int = 3) -> JobLease | None:
        """Claim the oldest eligible job for ``worker_id`` and open its attempt's building snapshot.

        Returns the lease (its ``snapshot_id`` set), or None when the queue has nothing eligible. PostgreSQL
        reads the candidate with ``FOR UPDATE SKIP LOCKED``, claims it and inserts the snapshot in one
        statement, so concurrent workers take different jobs instead of racing for the oldest; the claim's
        guard (``status='queued'``, the attempt the read saw) is still what decides. The same statement notes in
        ``last_lapsed_check`` whether any running job's lease had lapsed. SQLite has one writer: a plain read
        finds whether anything is eligible, then the read, the claim and the snapshot share one write
        transaction. A candidate lost anyway is followed by a fresh read, ``tries`` times at most, and counted
        in ``claims_lost``.
        """
        now = self._now(now)
        for _ in range(tries):
            if connections[self.using].vendor == "postgresql":
                row, lease = self._claim_next_skip_locked(worker_id, now)
            else:
                row, lease = self._claim_next_serialised(worker_id, now)
            if row is None:
                return None
            if lease is not None:
                return lease
            self.claims_lost += 1
            logger.info("job id=%s event=claim_lost worker=%s", row[0], worker_id)
        return None

    def _candidates(self, now):
        return self._eligible(now).order_by("created_at", "id").values_list("id", "attempt", "source", "revision", "commit")

    def _claim_next_serialised(self, worker_id, now):
        if self._candidates(now).first() is None:
            return None, None  # idle: one read, and no write lock taken
        with transaction.atomic(using=self.using):
            row = self._candidates(now).first()
            lease = row and self.claim(row[0], worker_id, now, seen_attempt=row[1])
            if lease:
                lease = replace(lease, snapshot_id=self.begin_snapshot(lease), inputs=JobInputs(*row[2:]))
            return row, lease

    def _claim_next_skip_locked(self, worker_id, now):
        """Read the candidate, claim it and insert its snapshot in one statement; return ``(candidate, lease)``.

        Had the guard refused the claim, the snapshot would stay behind unattached, which nothing reads (as after
        a crash between ``begin_snapshot``'s two statements).
        """
        expires = now + dt.timedelta(seconds=self.lease_seconds)
        _, row = statements.execute(self.using, statements.CLAIM_NEXT, {"now": now, "expires": expires, "worker_id": worker_id})
        job_id, seen_attempt, attempt, snapshot_id, *inputs, any_lapsed = row
        self.last_lapsed_check = LapsedLeaseCheck(at=now, any_lapsed=any_lapsed)
        if job_id is None:
            return None, None
        if attempt is None:
            return (job_id, seen_attempt), None
        metrics.CLAIMS.inc()
        logger.info("job id=%s attempt=%s stage=%s state=claimed worker=%s", job_id, attempt, "", worker_id)
        lease = JobLease(
            job_id=job_id, worker_id=worker_id, attempt=attempt, expires_at=expires, snapshot_id=snapshot_id,
            inputs=JobInputs(*inputs),
        )
        return (job_id, seen_attempt), lease

    def _execute(self, sql: str, params: dict) -> int:
        """Run one of the hot path's ``statements`` and return how many rows it wrote."""
        return statements.execute(self.using, sql, params)[0]

    @staticmethod
    def _owner(lease: JobLease) -> dict:
        return {"job_id": lease.job_id, "worker_id": lease.worker_id, "attempt": lease.attempt}

    def job_inputs(self, job_id: int) -> JobInputs:
        """Return what job ``job_id`` asks to analyse."""
        return JobInputs(*self._jobs().filter(pk=job_id).values_list("source", "revision", "commit").get())

    def _owned(self, lease: JobLease, *, require_cancel_not_requested: bool = False, require_unsealed: bool = False):
        guard = self._jobs().filter(
            pk=lease.job_id, status=JobStatus.RUNNING, worker_id=lease.worker_id, attempt=lease.attempt
        )
        if require_cancel_not_requested:
            guard = guard.filter(cancel_requested=False)
        if require_unsealed:
            guard = guard.exclude(stage=SEALED_STAGE)
        return guard

    def renew(self, lease: JobLease, now: dt.datetime | None = None, **progress) -> LeaseRenewal:
        """Extend ``lease`` (saving ``stage``/``progress`` if given) and report whether cancellation was asked.

        The flag is read by the renewal itself: the first update's guard includes ``cancel_requested=False``, so
        when it matches, no cancellation had been accepted at the instant the lease was extended; when only the
        second (flag-blind) update matches, one had. The flag never goes back to False, so nothing slips between
        the two. The usual case is one statement. ``lost`` means the worker must stop and write nothing;
        ``deferred`` means the database refused the write for now (a busy SQLite lock or a server that is away)
        and ownership is as it was.
        """
        now = self._now(now)
        changes = dict(progress, lease_expires_at=now + dt.timedelta(seconds=self.lease_seconds), updated_at=now)
        owned = self._owned(lease)
        try:
            if owned.filter(cancel_requested=False).update(**changes) == 1:
                return LeaseRenewal(RenewalOutcome.RENEWED, cancel_requested=False)
            if owned.update(**changes) == 1:
                return LeaseRenewal(RenewalOutcome.RENEWED, cancel_requested=True)
        except (OperationalError, InterfaceError):
            logger.warning("job id=%s attempt=%s event=renew_deferred worker=%s", lease.job_id, lease.attempt, lease.worker_id)
            return LeaseRenewal(RenewalOutcome.DEFERRED)
        metrics.FENCED.inc()
        return LeaseRenewal(RenewalOutcome.LOST)

    def update_owned(
        self, lease: JobLease, *, require_cancel_not_requested: bool = False, require_unsealed: bool = False, **fields
    ) -> bool:
        """Write ``fields`` to the job if ``lease`` still owns it; False (and nothing written) if not.

        With ``require_cancel_not_requested`` the write also loses to an accepted cancellation, and with
        ``require_unsealed`` to a sealed snapshot. This neither commits nor rolls back an enclosing
        transaction: what a miss means is the caller's decision.
        """
        fields.setdefault("updated_at", self.clock.now())
        guard = self._owned(
            lease, require_cancel_not_requested=require_cancel_not_requested, require_unsealed=require_unsealed
        )
        if guard.update(**fields) == 1:
            return True
        metrics.FENCED.inc()
        return False

    def reclaim(self, expired: ExpiredLease, worker_id: str, now: dt.datetime | None = None) -> JobLease | None:
        """Take over a job whose lease lapsed, for ``worker_id`` (the sweeper); None if anything moved since.

        The guard pins the owner and the exact lease instant the scan saw and requires the lease to have
        lapsed still, so a renewal that landed after the scan defeats the reclaim. No attempt is spent.
        """
        now = self._now(now)
        expires = now + dt.timedelta(seconds=self.lease_seconds)
        with transaction.atomic(using=self.using):
            guard = self._jobs().filter(
                pk=expired.job_id,
                status=JobStatus.RUNNING,
                worker_id=expired.worker_id,
                lease_expires_at=expired.lease_expires_at,
                lease_expires_at__lt=now,
            )
            if guard.update(worker_id=worker_id, lease_expires_at=expires, updated_at=now) != 1:
                return None
            attempt = self._jobs().filter(pk=expired.job_id).values_list("attempt", flat=True).get()
        metrics.RECLAIMS.inc()
        logger.info(
            "job id=%s attempt=%s stage=%s state=reclaimed worker=%s prior=%s",
            expired.job_id, attempt, "", worker_id, expired.worker_id,
        )
        return JobLease(job_id=expired.job_id, worker_id=worker_id, attempt=attempt, expires_at=expires)

    # -- the owner's transitions -------------------------------------------------------------------------------

    def begin_snapshot(self, lease: JobLease) -> int | None:
        """Create this attempt's building snapshot and attach it to the job; None if the lease is gone.

        Refused too once the attempt's snapshot is sealed: attaching a new one would detach the sealed one and
        let the completion finish the job on a snapshot that holds nothing. Two autocommit statements rather
        than a transaction: a crash between them leaves an unattached building snapshot, which no job points at
        and nothing reads.
        """
        now = self.clock.now()
        snapshot = AnalysisSnapshot.objects.using(self.using).create(created_at=now)
        if not self.update_owned(lease, require_unsealed=True, snapshot_id=snapshot.pk, updated_at=now):
            snapshot.delete()
            return None
        return snapshot.pk

    # Bytes of new chunks stored per statement while a document is written: enough to keep round trips few, few
    # enough that a document of hundreds of MB is never held whole.
    DOCUMENT_BATCH_BYTES = 4 * 1024 * 1024

    def store_document(self, lease: JobLease, pieces: Iterable[bytes]) -> StoredDocument | None:
        """Store the chunks of the document ``pieces`` make (canonical JSON, in order) for this attempt's seal.

        The chunks are cut and stored as the pieces come, a batch at a time, each batch written only while this
        worker owns the job and no cancellation was accepted; a chunk stored already (by any snapshot) is not
        sent again. Returns what the seal needs, or None if the guard failed (nothing more is written; what was
        stored before is listed by no snapshot, and pruned). Storing lists nothing: only the seal does.
        """
        store, writer, pending, size = DocumentStore(self.using), ChunkWriter(), [], 0
        for piece in pieces:
            for chunk in writer.write(piece):
                pending.append(chunk)
                size += len(chunk.text)
            if size >= self.DOCUMENT_BATCH_BYTES:
                if not self._store_chunks(store, lease, pending):
                    return None
                pending, size = [], 0
        last, document = writer.finish()
        if not self._store_chunks(store, lease, pending + last):
            return None
        return document

    def _store_chunks(self, store: DocumentStore, lease: JobLease, chunks: list[Chunk]) -> bool:
        stored = store.stored(chunk.digest for chunk in chunks)
        new = [chunk for chunk in chunks if chunk.digest not in stored]
        return not new or store.put_chunks(new, self.clock.now(), guard=statements.OWNS, params=self._owner(lease))

    def seal(self, lease: JobLease, *, snapshot_id: int, document: StoredDocument, identity: str = "",
             summary: dict | None = None) -> bool:
        """Seal the attempt's snapshot with the stored ``document`` (commit one of two); False if the lease is gone or cancellation won.

        The job's guard (with the cancellation guard, and ``snapshot_id`` still the job's building snapshot) is
        taken in the same transaction as the snapshot's update and its document's list of chunks, so a job that
        another worker reclaimed or a user cancelled never gets a sealed snapshot from this worker. PostgreSQL
        does it all in one statement. ``summary`` is kept beside the document, to be shown without reading it.
        """
        now = self.clock.now()
        params = {
            **self._owner(lease), "snapshot_id": snapshot_id, "expires": now + dt.timedelta(seconds=self.lease_seconds),
            "now": now, "size": document.size, "content_hash": document.content_hash, "identity": identity,
            "summary": None if summary is None else json.dumps(summary, sort_keys=True),
        }
        if connections[self.using].vendor == "postgresql":
            sealed = self._execute(statements.SEAL, {**params, "digests": list(document.digests)}) == 1
        else:
            with transaction.atomic(using=self.using):
                sealed = self._execute(statements.SEAL_JOB, params) == 1
                sealed = sealed and self._execute(statements.SEAL_SNAPSHOT, params) == 1
                if sealed:
                    DocumentStore(self.using).put_list(snapshot_id, document.digests)
                else:
                    transaction.set_rollback(True, using=self.using)
        if sealed:
            logger.info("job id=%s attempt=%s stage=seal state=sealed worker=%s", lease.job_id, lease.attempt, lease.worker_id)
        return sealed

    def complete(self, lease: JobLease) -> bool:
        """Mark the job completed (commit two of two); False unless its snapshot was sealed under this lease.

        A sealed snapshot wins over a cancellation that arrived after it, so this does not check the flag.
        """
        done = self._execute(statements.COMPLETE, {**self._owner(lease), "now": self.clock.now()}) == 1
        if done:
            metrics.COMPLETIONS.inc()
            _announce(self.using, JobStatus.COMPLETED, [lease.job_id])
            logger.info("job id=%s attempt=%s stage=done state=completed worker=%s", lease.job_id, lease.attempt, lease.worker_id)
        return done

    def complete_with_snapshot(self, lease: JobLease, snapshot_id: int) -> bool:
        """Complete the job by pointing it at an existing sealed snapshot with the same identity; False if not.

        False (nothing written) if the lease is gone, cancellation was accepted, or ``snapshot_id`` is not
        sealed. The attempt's own building snapshot is deleted: it never held facts.
        """
        now = self.clock.now()
        snapshots = AnalysisSnapshot.objects.using(self.using)
        with transaction.atomic(using=self.using):
            if not snapshots.filter(pk=snapshot_id, state=SnapshotState.SEALED).exists():
                return False
            building = self._owned(lease).values_list("snapshot_id", flat=True).first()
            if not self.update_owned(
                lease,
                require_cancel_not_requested=True,
                snapshot_id=snapshot_id,
                status=JobStatus.COMPLETED,
                stage="done",
                progress=100,
                lease_expires_at=None,
                completed_at=now,
                updated_at=now,
                error_code="",
                error_message="",
            ):
                return False
            if building is not None and building != snapshot_id:
                snapshots.filter(pk=building, state=SnapshotState.BUILDING).delete()
            _announce(self.using, JobStatus.COMPLETED, [lease.job_id])
        metrics.COMPLETIONS.inc()
        logger.info(
            "job id=%s attempt=%s stage=done state=completed worker=%s reused=%s",
            lease.job_id, lease.attempt, lease.worker_id, snapshot_id,
        )
        return True

    def _reusable_snapshot(self, source, revision, commit, identity, owner, max_attempts):
        """Create a completed job on the sealed snapshot with ``identity`` and return it; None if there is none."""
        reused = self._reuse_many([source], revision, {source: commit}, {source: identity}, owner, max_attempts)
        return reused.get(source)

    def _reuse_many(self, sources, revision, commits, identities, owner, max_attempts) -> dict[str, AnalysisJob]:
        """Create a completed job for each of ``sources`` whose identity has a sealed snapshot, pointing at the oldest.

        Return the jobs by source. A source with no identity in ``identities``, or none sealed, gets nothing.
        """
        wanted = {identities[source] for source in sources if identities.get(source)}
        if not wanted:
            return {}
        sealed = {}
        for identity, pk in (
            AnalysisSnapshot.objects.using(self.using)
            .filter(identity__in=wanted, state=SnapshotState.SEALED)
            .order_by("-pk")
            .values_list("identity", "pk")
        ):
            sealed[identity] = pk  # the oldest comes last and stays
        reusing = [source for source in sources if identities.get(source) in sealed]
        if not reusing:
            return {}
        now = self.clock.now()
        jobs = self._jobs().bulk_create([
            AnalysisJob(
                source=source, revision=revision, commit=commits.get(source, ""), owner=owner, max_attempts=max_attempts,
                status=JobStatus.COMPLETED, stage="done", progress=100, snapshot_id=sealed[identities[source]],
                created_at=now, updated_at=now, completed_at=now,
            )
            for source in reusing
        ])
        _announce(self.using, JobStatus.COMPLETED, [job.pk for job in jobs])
        for job in jobs:
            logger.info("job id=%s event=enqueued state=completed reused=%s", job.pk, job.snapshot_id)
        return {job.source: job for job in jobs}

    def finish_cancelled(self, lease: JobLease) -> bool:
        """Mark the job cancelled and fail its building snapshot; False if the lease is gone or it was sealed."""
        now = self.clock.now()
        with transaction.atomic(using=self.using):
            done = self.update_owned(
                lease,
                require_unsealed=True,
                status=JobStatus.CANCELLED,
                lease_expires_at=None,
                completed_at=now,
                updated_at=now,
                error_code=CANCELLED_CODE,
                error_message="Cancellation was requested.",
            )
            if done:
                self._fail_building_snapshot(lease.job_id, CANCELLED_CODE)
                _announce(self.using, JobStatus.CANCELLED, [lease.job_id])
                requested_at = self._jobs().filter(pk=lease.job_id).values_list("cancel_requested_at", flat=True).first()
                metrics.observe_cancellation(requested_at, now)
        if done:
            logger.info("job id=%s attempt=%s stage=%s state=cancelled worker=%s", lease.job_id, lease.attempt, "", lease.worker_id)
        return done

    def apply_failure(self, lease: JobLease, decision: Requeue | Fail) -> bool:
        """Requeue the job with backoff or fail it, as ``decision`` says; False if the lease is gone.

        A requeue loses to an accepted cancellation: the job is cancelled instead, so no request is dropped.
        Neither overrides a sealed snapshot: such a job is completed instead.
        """
        now = self.clock.now()
        with transaction.atomic(using=self.using):
            if isinstance(decision, Requeue):
                done = self.update_owned(
                    lease,
                    require_cancel_not_requested=True,
                    require_unsealed=True,
                    status=JobStatus.QUEUED,
                    worker_id="",
                    lease_expires_at=None,
                    next_attempt_at=decision.at,
                    stage="",
                    progress=0,
                    error_code=decision.code,
                    error_message=decision.message,
                    updated_at=now,
                )
                if not done:
                    return self.complete(lease) or self.finish_cancelled(lease)
                state = "requeued"
            else:
                done = self.update_owned(
                    lease,
                    require_unsealed=True,
                    status=JobStatus.FAILED,
                    lease_expires_at=None,
                    completed_at=now,
                    error_code=decision.code,
                    error_message=decision.message,
                    updated_at=now,
                )
                if not done:
                    return self.complete(lease)
                _announce(self.using, JobStatus.FAILED, [lease.job_id])
                metrics.FAILURES.labels(code=decision.code).inc()
                state = "failed"
            if done:
                self._fail_building_snapshot(lease.job_id, decision.code)
        if done:
            logger.info(
                "job id=%s attempt=%s stage=%s state=%s worker=%s code=%s",
                lease.job_id, lease.attempt, "", state, lease.worker_id, decision.code,
            )
        return done

    def hand_back(self, lease: JobLease) -> bool:
        """Give an unfinished job back to the queue at once, refunding its attempt; False if the lease is gone.

        A job whose cancellation was requested is cancelled instead, and one whose snapshot is already sealed is
        completed instead: handing it back would run its seal twice.
        """
        now = self.clock.now()
        with transaction.atomic(using=self.using):
            done = self.update_owned(
                lease,
                require_cancel_not_requested=True,
                require_unsealed=True,
                status=JobStatus.QUEUED,
                worker_id="",
                lease_expires_at=None,
                next_attempt_at=None,
                attempt=F("attempt") - 1,
                stage="",
                progress=0,
                updated_at=now,
            )
            if not done:
                return self.complete(lease) or self.finish_cancelled(lease)
            self._fail_building_snapshot(lease.job_id, HANDED_BACK_CODE)
            send_wakeup(self.using, str(lease.job_id))  # an idle worker takes it at once
        logger.info("job id=%s attempt=%s stage=%s state=handed_back worker=%s", lease.job_id, lease.attempt, "", lease.worker_id)
        return True

    def _fail_building_snapshot(self, job_id: int, code: str) -> None:
        AnalysisSnapshot.objects.using(self.using).filter(jobs__id=job_id, state=SnapshotState.BUILDING).update(
            state=SnapshotState.FAILED, failure_code=code
        )

    # -- cancellation ------------------------------------------------------------------------------------------

    def request_cancel(self, job_id: int, by: str = "") -> CancelOutcome:
        """Cancel a queued job at once, or ask a running one's worker to stop; idempotent.

        Raises ``CancelRefused`` with the reason for a job that is finished or does not exist.
        """
        now = self.clock.now()
        while True:
            cancelled = self._jobs().filter(pk=job_id, status=JobStatus.QUEUED).update(
                status=JobStatus.CANCELLED,
                completed_at=now,
                updated_at=now,
                error_code=CANCELLED_CODE,
                error_message=f"Cancelled before it started{f' by {by}' if by else ''}.",
            )
            if cancelled:
                _announce(self.using, JobStatus.CANCELLED, [job_id])
                logger.info("job id=%s event=cancelled by=%s", job_id, by or "-")
                return CancelOutcome.CANCELLED
            requested = self._jobs().filter(pk=job_id, status=JobStatus.RUNNING)
            if requested.filter(cancel_requested=False).update(cancel_requested=True, cancel_requested_at=now, updated_at=now) or (
                requested.update(updated_at=now)  # asked again: the first request's time stands
            ):
                logger.info("job id=%s event=cancel_requested by=%s", job_id, by or "-")
                return CancelOutcome.REQUESTED
            status = self._jobs().filter(pk=job_id).values_list("status", flat=True).first()
            if status is None:
                raise CancelRefused(f"Job {job_id} does not exist.")
            if status in (JobStatus.COMPLETED, JobStatus.FAILED, JobStatus.CANCELLED):
                raise CancelRefused(f"Job {job_id} is already {status}.")
            # It moved between queued and running while we looked: try again.


_FINISHED_SIGNALS = {
    JobStatus.COMPLETED: signals.analysis_completed,
    JobStatus.FAILED: signals.analysis_failed,
    JobStatus.CANCELLED: signals.analysis_cancelled,
}


def _announce(using: str, status: str, job_ids) -> None:
    """Send the finished signal for each job once the transaction that finished it commits (at once outside one)."""
    signal = _FINISHED_SIGNALS[status]
    for job_id in job_ids:
        transaction.on_commit(lambda job_id=job_id: signal.send(sender=AnalysisJob, job_id=job_id), using=using)


def is_database_unavailable(exc: BaseException) -> bool:
    """Return True for errors that mean the database is away or busy, not that a query is wrong."""
    return isinstance(exc, (OperationalError, InterfaceError))
