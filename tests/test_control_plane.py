"""
The control plane against a real database: every guard, and the races each one exists for.

Every test here runs on SQLite and on PostgreSQL with the same assertions, except the threaded races, which need
real concurrent transactions and run on PostgreSQL only. Races are forced: two workers read the same candidate
before either reaches the compare-and-swap, a renewal is landed between a scan and its reclaim, and threads meet
at a ``threading.Barrier``.
"""

import hashlib
import datetime as dt
import threading

import pytest
from django.db import IntegrityError, connection, connections
from django.test.utils import CaptureQueriesContext

from analysis_jobs.clock import FakeClock
from analysis_jobs.control_plane import (
    CANCELLED_CODE,
    HANDED_BACK_CODE,
    CancelOutcome,
    DatabaseControlPlane,
    ExpiredLease,
    JobInputs,
    JobLease,
    LeaseRenewal,
    RenewalOutcome,
)
from analysis_jobs.decisions import FAILED_CODE, Fail, Requeue
from analysis_jobs.exceptions import CancelRefused
from analysis_jobs.models import AnalysisJob, AnalysisSnapshot, JobStatus, SnapshotState
from tests.racing import RacingControlPlane
from tests.documents_support import stored_document
from analysis_jobs.pipeline import content_hash

LEASE = 30  # seconds; the ``control_plane`` fixture's lease


def row(job_id):
    """Return every column of the job as the database holds it now."""
    return AnalysisJob.objects.filter(pk=job_id).values().get()


def snapshot_rows():
    return list(AnalysisSnapshot.objects.order_by("pk").values())


def expire(fake_clock, lease):
    """Move the clock past ``lease`` so the expiry scan sees it."""
    fake_clock.advance((lease.expires_at - fake_clock.now()).total_seconds() + 1)


def every_owner_write(cp, lease, snapshot_id=None):
    """Try every write a lease holder can make; return what each one answered."""
    return {
        "renew": cp.renew(lease, stage="late", progress=50).outcome,
        "update_owned": cp.update_owned(lease, stage="late", progress=50),
        "begin_snapshot": cp.begin_snapshot(lease),
        "seal": cp.seal(lease, snapshot_id=snapshot_id or 0, document=stored_document("{}")),
        "complete": cp.complete(lease),
        "finish_cancelled": cp.finish_cancelled(lease),
        "apply_failure(requeue)": cp.apply_failure(lease, Requeue(at=cp.clock.now(), code=FAILED_CODE, message="late")),
        "apply_failure(fail)": cp.apply_failure(lease, Fail(code=FAILED_CODE, message="late")),
        "hand_back": cp.hand_back(lease),
    }


REFUSED = {
    "renew": RenewalOutcome.LOST,
    "update_owned": False,
    "begin_snapshot": None,
    "seal": False,
    "complete": False,
    "finish_cancelled": False,
    "apply_failure(requeue)": False,
    "apply_failure(fail)": False,
    "hand_back": False,
}


# -- eligibility and claim -------------------------------------------------------------------------------------


def test_the_oldest_eligible_job_is_the_candidate(db, control_plane, make_job, fake_clock):
    older = make_job()
    fake_clock.advance(1)
    make_job()
    assert control_plane.next_eligible_job_id() == older.pk


def test_a_job_in_backoff_is_hidden_until_its_next_attempt_time(db, control_plane, make_job, fake_clock):
    waiting = make_job(next_attempt_at=fake_clock.now() + dt.timedelta(seconds=10))
    fake_clock.advance(1)
    later = make_job()
    assert control_plane.next_eligible_job_id() == later.pk
    assert control_plane.claim(waiting.pk, "w1") is None
    fake_clock.advance(9)
    assert control_plane.next_eligible_job_id() == waiting.pk
    assert control_plane.claim(waiting.pk, "w1") is not None


def test_a_job_whose_attempt_budget_is_spent_is_never_claimed(db, control_plane, make_job):
    spent = make_job(attempt=3, max_attempts=3)
    assert control_plane.next_eligible_job_id() is None
    assert control_plane.claim(spent.pk, "w1") is None
    assert control_plane.claim_next("w1") is None
    assert row(spent.pk)["status"] == JobStatus.QUEUED and row(spent.pk)["attempt"] == 3


def test_running_and_terminal_jobs_are_not_candidates(db, control_plane, make_job):
    running = make_job()
    control_plane.claim(running.pk, "w1")
    cancelled = make_job()
    control_plane.request_cancel(cancelled.pk)
    assert control_plane.next_eligible_job_id() is None
    assert control_plane.claim_next("w2") is None


def test_a_claim_leases_the_job_spends_one_attempt_opens_its_snapshot_and_reads_its_inputs(
    db, control_plane, make_job, fake_clock
):
    job = make_job(next_attempt_at=fake_clock.now(), stage="old", progress=40, revision="main", commit="c0ffee")
    lease = control_plane.claim_next("w1")
    now = fake_clock.now()
    after = row(job.pk)
    assert lease == JobLease(
        job_id=job.pk, worker_id="w1", attempt=1, expires_at=now + dt.timedelta(seconds=LEASE),
        snapshot_id=after["snapshot_id"], inputs=JobInputs(source=job.source, revision="main", commit="c0ffee"),
    )
    snapshot = AnalysisSnapshot.objects.get()
    assert (snapshot.pk, snapshot.state, snapshot.created_at) == (lease.snapshot_id, SnapshotState.BUILDING, now)
    assert after["status"] == JobStatus.RUNNING
    assert (after["worker_id"], after["attempt"], after["lease_expires_at"]) == ("w1", 1, lease.expires_at)
    assert (after["started_at"], after["next_attempt_at"], after["stage"], after["progress"]) == (now, None, "", 0)


def test_claim_without_a_pinned_attempt_reads_the_attempt_it_set(db, control_plane, make_job):
    job = make_job(attempt=1)
    lease = control_plane.claim(job.pk, "w1")
    assert lease.attempt == 2 == row(job.pk)["attempt"]


def test_claim_next_takes_jobs_oldest_first(db, control_plane, make_job, fake_clock):
    jobs = []
    for _ in range(3):
        jobs.append(make_job())
        fake_clock.advance(1)
    claimed = [control_plane.claim_next(f"w{i}").job_id for i in range(3)]
    assert claimed == [job.pk for job in jobs]
    assert control_plane.claim_next("w9") is None


# PostgreSQL reads and claims in one statement (FOR UPDATE SKIP LOCKED). SQLite checks with one read whether
# anything is eligible, then reads and claims inside one write transaction (SAVEPOINT, SELECT, UPDATE, RELEASE
# here, because the test's own transaction encloses it).
CLAIM_NEXT_QUERIES = {"postgresql": 1, "sqlite": 7}


def test_claim_next_is_a_fixed_number_of_queries(db, control_plane, make_job, django_assert_num_queries):
    make_job()
    with django_assert_num_queries(CLAIM_NEXT_QUERIES[connection.vendor]):
        assert control_plane.claim_next("w1") is not None
    with django_assert_num_queries(1):  # an idle poll is one read and takes no write lock
        assert control_plane.claim_next("w2") is None


@pytest.mark.postgres_only
def test_postgresql_prepares_the_claim_the_seal_and_the_completion_once_per_connection(db, control_plane, make_job):
    """After psycopg's threshold of uses they run as prepared statements; the server no longer parses them."""
    connection.ensure_connection()
    assert connection.connection.prepare_threshold == 5  # the project's settings
    for _ in range(6):
        make_job()
        lease = control_plane.claim_next("w1")
        assert control_plane.seal(lease, snapshot_id=lease.snapshot_id, document=stored_document("{}"))
        assert control_plane.complete(lease)
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        prepared = [" ".join(statement.split()) for (statement,) in cursor.fetchall()]
    for opening in ("WITH candidate AS (", "WITH job AS (", "UPDATE analysis_jobs_analysisjob SET status = 'completed'"):
        assert sum(statement.startswith(opening) for statement in prepared) == 1, (opening, prepared)


def test_renew_is_one_guarded_update_and_reads_the_flag_in_its_guard(db, control_plane, make_job, django_assert_num_queries):
    make_job()
    lease = control_plane.claim_next("w1")
    with django_assert_num_queries(1) as captured:
        assert control_plane.renew(lease, stage="inventory", progress=45) == LeaseRenewal(RenewalOutcome.RENEWED, False)
    assert [query["sql"].split()[0] for query in captured.captured_queries] == ["UPDATE"]
    control_plane.request_cancel(lease.job_id)
    # With the flag set, the flag-guarded update misses and the flag-blind one renews: two statements.
    with django_assert_num_queries(2):
        assert control_plane.renew(lease) == LeaseRenewal(RenewalOutcome.RENEWED, True)


# -- the duplicate claim -------------------------------------------------------------------------------------


def test_two_workers_reading_the_same_candidate_one_wins_and_the_loser_spends_nothing(db, control_plane, make_job):
    job = make_job()
    # Both workers read the candidate before either reaches the compare-and-swap.
    seen_by_a = control_plane.next_eligible_job_id()
    seen_by_b = control_plane.next_eligible_job_id()
    assert seen_by_a == seen_by_b == job.pk
    won = control_plane.claim(seen_by_a, "worker-a", seen_attempt=0)
    lost = control_plane.claim(seen_by_b, "worker-b", seen_attempt=0)
    assert won is not None and won.worker_id == "worker-a"
    assert lost is None
    assert (row(job.pk)["worker_id"], row(job.pk)["attempt"]) == ("worker-a", 1)
    # Without the attempt pin the status guard alone refuses the loser.
    assert control_plane.claim(job.pk, "worker-b") is None
    assert (row(job.pk)["worker_id"], row(job.pk)["attempt"]) == ("worker-a", 1)


def test_a_candidate_read_before_the_job_went_round_is_refused(db, control_plane, make_job, fake_clock):
    job = make_job()
    stale_attempt = AnalysisJob.objects.get(pk=job.pk).attempt
    first = control_plane.claim(job.pk, "worker-a")
    control_plane.apply_failure(first, Requeue(at=fake_clock.now(), code=FAILED_CODE, message="boom"))
    # Queued and eligible again, but not the row the slow worker read.
    assert control_plane.claim(job.pk, "worker-b", seen_attempt=stale_attempt) is None
    assert row(job.pk)["status"] == JobStatus.QUEUED and row(job.pk)["attempt"] == 1


@pytest.mark.postgres_only
def test_threads_racing_one_pinned_candidate_exactly_one_wins(transactional_db, make_job, fake_clock):
    job = make_job()
    threads_count = 8
    barrier = threading.Barrier(threads_count)
    results = [None] * threads_count
    errors = []

    def contend(index):
        try:
            cp = DatabaseControlPlane(clock=fake_clock, lease_seconds=LEASE)
            candidate = cp.next_eligible_job_id()
            barrier.wait(timeout=30)  # every thread has read the same candidate; now all hit the CAS at once
            results[index] = cp.claim(candidate, f"w{index}", seen_attempt=0)
        except BaseException as error:  # surfaced below; a thread must not die silently
            errors.append(error)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=contend, args=(i,)) for i in range(threads_count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    winners = [lease for lease in results if lease is not None]
    assert len(winners) == 1
    assert (row(job.pk)["worker_id"], row(job.pk)["attempt"]) == (winners[0].worker_id, 1)


@pytest.mark.postgres_only
def test_threads_draining_a_queue_claim_every_job_exactly_once(transactional_db, make_job, fake_clock):
    jobs = [make_job() for _ in range(40)]
    threads_count = 6
    barrier = threading.Barrier(threads_count)
    claimed = [[] for _ in range(threads_count)]
    errors = []

    def drain(index):
        try:
            cp = DatabaseControlPlane(clock=fake_clock, lease_seconds=LEASE)
            barrier.wait(timeout=30)
            for _ in range(10 * len(jobs)):  # bounded, so a broken claim that never drains the queue fails fast
                if cp.next_eligible_job_id() is None:
                    break
                lease = cp.claim_next(f"w{index}")
                if lease is not None:
                    claimed[index].append(lease.job_id)
        except BaseException as error:
            errors.append(error)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=drain, args=(i,)) for i in range(threads_count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    all_claimed = [job_id for per_thread in claimed for job_id in per_thread]
    assert sorted(all_claimed) == sorted(job.pk for job in jobs)
    assert set(AnalysisJob.objects.values_list("status", "attempt")) == {(JobStatus.RUNNING, 1)}


# -- renewal ---------------------------------------------------------------------------------------------------


def test_renew_extends_the_lease_and_saves_progress(db, control_plane, make_job, fake_clock):
    make_job()
    lease = control_plane.claim_next("w1")
    fake_clock.advance(20)
    renewal = control_plane.renew(lease, stage="inventory", progress=45)
    assert renewal.renewed and not renewal.cancel_requested
    after = row(lease.job_id)
    assert after["lease_expires_at"] == fake_clock.now() + dt.timedelta(seconds=LEASE)
    assert (after["stage"], after["progress"]) == ("inventory", 45)


def test_a_cancellation_is_seen_by_the_next_renewal(db, control_plane, make_job):
    make_job()
    lease = control_plane.claim_next("w1")
    assert control_plane.request_cancel(lease.job_id, by="alice") is CancelOutcome.REQUESTED
    renewal = control_plane.renew(lease)
    assert renewal.renewed and renewal.cancel_requested
    assert row(lease.job_id)["status"] == JobStatus.RUNNING  # the worker decides; the renewal only reports


# -- reclaim ---------------------------------------------------------------------------------------------------


def test_an_expired_lease_is_reclaimed_without_spending_an_attempt(db, control_plane, make_job, fake_clock):
    make_job()
    lease = control_plane.claim_next("w1")
    expire(fake_clock, lease)
    expired = control_plane.expired_leases()
    assert expired == [ExpiredLease(job_id=lease.job_id, worker_id="w1", lease_expires_at=lease.expires_at)]
    assert control_plane.expired_job_ids() == [lease.job_id]
    taken = control_plane.reclaim(expired[0], "sweeper")
    assert taken == JobLease(lease.job_id, "sweeper", 1, fake_clock.now() + dt.timedelta(seconds=LEASE))
    after = row(lease.job_id)
    assert (after["status"], after["worker_id"], after["attempt"]) == (JobStatus.RUNNING, "sweeper", 1)
    assert control_plane.expired_leases() == []


def test_an_active_lease_is_never_stolen(db, control_plane, make_job, fake_clock):
    make_job()
    lease = control_plane.claim_next("w1")
    fake_clock.advance(LEASE)  # the lease ends now: not lapsed yet
    assert control_plane.expired_leases() == []
    # Even with the exact values a scan would have seen, a reclaim of a live lease takes nothing.
    forged = ExpiredLease(job_id=lease.job_id, worker_id="w1", lease_expires_at=lease.expires_at)
    before = row(lease.job_id)
    assert control_plane.reclaim(forged, "sweeper") is None
    assert row(lease.job_id) == before
    assert control_plane.renew(lease).renewed


def test_a_renewal_between_scan_and_reclaim_defeats_the_reclaim(db, control_plane, make_job, fake_clock):
    make_job()
    lease = control_plane.claim_next("w1")
    expire(fake_clock, lease)
    [seen] = control_plane.expired_leases()
    assert control_plane.renew(lease).renewed  # the slow worker renews after the scan
    assert control_plane.reclaim(seen, "sweeper") is None
    assert row(lease.job_id)["worker_id"] == "w1"
    assert control_plane.renew(lease).renewed


def test_a_renewal_from_a_lagging_clock_still_defeats_the_reclaim(db, control_plane, make_job, fake_clock):
    """The lease instant is pinned, not just "still lapsed": a worker whose clock runs behind renews to a time
    that is past on the sweeper's clock, and the reclaim must still see that the row moved."""
    make_job()
    lease = control_plane.claim_next("w1")
    fake_clock.advance(100)
    [seen] = control_plane.expired_leases()
    lagging_now = fake_clock.now() - dt.timedelta(seconds=60)
    assert control_plane.renew(lease, now=lagging_now).renewed
    assert row(lease.job_id)["lease_expires_at"] < fake_clock.now()  # still lapsed by the sweeper's clock
    assert control_plane.reclaim(seen, "sweeper") is None
    assert row(lease.job_id)["worker_id"] == "w1"


def test_two_sweepers_reclaiming_one_scan_only_one_takes_it(db, control_plane, make_job, fake_clock):
    make_job()
    lease = control_plane.claim_next("w1")
    expire(fake_clock, lease)
    [seen_by_a] = control_plane.expired_leases()
    [seen_by_b] = control_plane.expired_leases()
    assert control_plane.reclaim(seen_by_a, "sweeper-a") is not None
    assert control_plane.reclaim(seen_by_b, "sweeper-b") is None
    assert row(lease.job_id)["worker_id"] == "sweeper-a"


def test_the_reclaimer_owns_the_job_and_sees_a_cancellation_asked_before_the_handoff(db, control_plane, make_job, fake_clock):
    make_job()
    lease = control_plane.claim_next("w1")
    control_plane.request_cancel(lease.job_id)
    expire(fake_clock, lease)
    taken = control_plane.reclaim(control_plane.expired_leases()[0], "sweeper")
    renewal = control_plane.renew(taken)
    assert renewal.renewed and renewal.cancel_requested
    assert control_plane.renew(lease).lost
    assert control_plane.finish_cancelled(taken)
    assert row(lease.job_id)["status"] == JobStatus.CANCELLED


def test_a_cancellation_asked_after_the_handoff_is_seen_by_the_new_owner(db, control_plane, make_job, fake_clock):
    make_job()
    lease = control_plane.claim_next("w1")
    expire(fake_clock, lease)
    taken = control_plane.reclaim(control_plane.expired_leases()[0], "sweeper")
    assert control_plane.request_cancel(lease.job_id) is CancelOutcome.REQUESTED
    assert control_plane.renew(taken).cancel_requested


# -- ownership -------------------------------------------------------------------------------------------------


def test_the_old_owner_is_refused_every_write_after_a_reclaim(db, control_plane, make_job, fake_clock):
    make_job()
    lease = control_plane.claim_next("w1")
    snapshot_id = lease.snapshot_id
    expire(fake_clock, lease)
    control_plane.reclaim(control_plane.expired_leases()[0], "sweeper")
    job_before, snapshots_before = row(lease.job_id), snapshot_rows()
    fake_clock.advance(1)
    assert every_owner_write(control_plane, lease, snapshot_id) == REFUSED
    assert row(lease.job_id) == job_before
    assert snapshot_rows() == snapshots_before


def test_a_lease_from_an_earlier_attempt_of_the_same_worker_is_refused(db, control_plane, make_job, fake_clock):
    make_job()
    first = control_plane.claim_next("w1")
    control_plane.apply_failure(first, Requeue(at=fake_clock.now(), code=FAILED_CODE, message="boom"))
    second = control_plane.claim_next("w1")
    assert (second.job_id, second.worker_id, second.attempt) == (first.job_id, "w1", 2)
    snapshot_id = second.snapshot_id
    job_before, snapshots_before = row(first.job_id), snapshot_rows()
    assert every_owner_write(control_plane, first, snapshot_id) == REFUSED
    assert row(first.job_id) == job_before
    assert snapshot_rows() == snapshots_before
    assert control_plane.renew(second).renewed


def test_a_worker_that_never_held_the_job_is_refused(db, control_plane, make_job):
    make_job()
    lease = control_plane.claim_next("w1")
    snapshot_id = lease.snapshot_id
    stranger = JobLease(job_id=lease.job_id, worker_id="w2", attempt=lease.attempt, expires_at=lease.expires_at)
    job_before, snapshots_before = row(lease.job_id), snapshot_rows()
    assert every_owner_write(control_plane, stranger, snapshot_id) == REFUSED
    assert row(lease.job_id) == job_before
    assert snapshot_rows() == snapshots_before


def test_a_lease_on_a_job_that_does_not_exist_is_refused(db, control_plane, fake_clock):
    ghost = JobLease(job_id=999_999, worker_id="w1", attempt=1, expires_at=fake_clock.now())
    assert every_owner_write(control_plane, ghost) == REFUSED
    assert AnalysisSnapshot.objects.count() == 0  # begin_snapshot rolled its snapshot back


def test_update_owned_refuses_a_queued_job(db, control_plane, make_job):
    make_job()
    lease = control_plane.claim_next("w1")
    assert control_plane.hand_back(lease)
    same_claim = JobLease(lease.job_id, "", lease.attempt - 1, lease.expires_at)  # what the queued row holds
    assert not control_plane.update_owned(same_claim, stage="x")
    assert row(lease.job_id)["stage"] == ""


# -- terminal jobs ---------------------------------------------------------------------------------------------


def _finish(cp, make_job, fake_clock, status):
    """Bring a job to ``status`` through the real transitions; return its last lease."""
    make_job()
    lease = cp.claim_next("w1")
    snapshot_id = lease.snapshot_id
    if status == JobStatus.COMPLETED:
        assert cp.seal(lease, snapshot_id=snapshot_id, document=stored_document("{}"))
        assert cp.complete(lease)
    elif status == JobStatus.FAILED:
        assert cp.apply_failure(lease, Fail(code=FAILED_CODE, message="boom"))
    else:
        cp.request_cancel(lease.job_id)
        assert cp.finish_cancelled(lease)
    return lease, snapshot_id


@pytest.mark.parametrize("status", [JobStatus.COMPLETED, JobStatus.FAILED, JobStatus.CANCELLED])
def test_no_transition_moves_a_terminal_job(db, control_plane, make_job, fake_clock, status):
    lease, snapshot_id = _finish(control_plane, make_job, fake_clock, status)
    job_before, snapshots_before = row(lease.job_id), snapshot_rows()
    assert job_before["status"] == status
    fake_clock.advance(3600)
    assert every_owner_write(control_plane, lease, snapshot_id) == REFUSED
    assert control_plane.claim(lease.job_id, "w2") is None
    assert control_plane.claim(lease.job_id, "w2", seen_attempt=lease.attempt) is None
    assert control_plane.claim_next("w2") is None
    forged = ExpiredLease(job_id=lease.job_id, worker_id="w1", lease_expires_at=lease.expires_at)
    assert control_plane.reclaim(forged, "sweeper") is None
    with pytest.raises(CancelRefused, match=f"already {status}"):
        control_plane.request_cancel(lease.job_id)
    assert row(lease.job_id) == job_before
    assert snapshot_rows() == snapshots_before


def test_a_job_cancelled_while_queued_is_never_resurrected(db, control_plane, make_job, fake_clock):
    job = make_job()
    assert control_plane.request_cancel(job.pk) is CancelOutcome.CANCELLED
    before = row(job.pk)
    fake_clock.advance(3600)
    assert control_plane.claim_next("w1") is None
    assert control_plane.claim(job.pk, "w1") is None
    assert control_plane.claim(job.pk, "w1", seen_attempt=0) is None
    assert control_plane.expired_leases() == []
    assert row(job.pk) == before
    # Enqueueing the same source again makes a new job; the cancelled one stays cancelled.
    again, created = control_plane.enqueue(job.source, revision=job.revision)
    assert created and again.pk != job.pk
    assert row(job.pk) == before


def test_a_running_job_that_was_asked_to_stop_is_cancelled_not_requeued(db, control_plane, make_job, fake_clock):
    make_job()
    lease = control_plane.claim_next("w1")
    control_plane.request_cancel(lease.job_id)
    # A retry decision and a hand-back both lose to the accepted cancellation.
    assert control_plane.apply_failure(lease, Requeue(at=fake_clock.now(), code=FAILED_CODE, message="boom"))
    after = row(lease.job_id)
    assert (after["status"], after["error_code"]) == (JobStatus.CANCELLED, CANCELLED_CODE)
    assert control_plane.claim_next("w2") is None


def test_a_hand_back_of_a_job_asked_to_stop_cancels_it(db, control_plane, make_job):
    make_job()
    lease = control_plane.claim_next("w1")
    control_plane.request_cancel(lease.job_id)
    assert control_plane.hand_back(lease)
    after = row(lease.job_id)
    assert (after["status"], after["attempt"], after["error_code"]) == (JobStatus.CANCELLED, 1, CANCELLED_CODE)
    assert AnalysisSnapshot.objects.get().state == SnapshotState.FAILED


# -- sealing and completing ------------------------------------------------------------------------------------


def test_a_second_snapshot_after_the_seal_is_refused_and_the_sealed_one_stays(db, control_plane, make_job):
    """Found by the model check: a begin after the seal detached the sealed snapshot, and completion then
    finished the job on an empty building one."""
    make_job()
    lease = control_plane.claim_next("w1")
    assert control_plane.seal(lease, snapshot_id=lease.snapshot_id, document=stored_document("{}"))
    assert control_plane.begin_snapshot(lease) is None
    assert row(lease.job_id)["snapshot_id"] == lease.snapshot_id
    assert control_plane.complete(lease)
    assert AnalysisSnapshot.objects.get(pk=row(lease.job_id)["snapshot_id"]).state == SnapshotState.SEALED
    assert AnalysisSnapshot.objects.count() == 1  # the refused one was deleted


def test_seal_then_complete_finishes_the_job(db, control_plane, make_job, fake_clock):
    make_job()
    lease = control_plane.claim_next("w1")
    snapshot_id = lease.snapshot_id
    assert row(lease.job_id)["snapshot_id"] == snapshot_id
    assert not control_plane.complete(lease)  # nothing sealed yet
    assert control_plane.seal(lease, snapshot_id=snapshot_id, document=stored_document('{"a":1}'), identity="id1")
    snapshot = AnalysisSnapshot.objects.get(pk=snapshot_id)
    assert (snapshot.state, snapshot.read_facts(), snapshot.content_hash, snapshot.identity) == (
        SnapshotState.SEALED, '{"a":1}', content_hash('{"a":1}'), "id1",
    )
    assert snapshot.sealed_at == fake_clock.now()
    assert control_plane.complete(lease)
    after = row(lease.job_id)
    assert (after["status"], after["stage"], after["progress"], after["lease_expires_at"]) == (
        JobStatus.COMPLETED, "done", 100, None,
    )
    assert after["completed_at"] == fake_clock.now()


def test_seal_refuses_a_snapshot_that_is_not_the_jobs_own_and_seals_neither(db, control_plane, make_job):
    make_job()
    make_job()
    first, second = control_plane.claim_next("w1"), control_plane.claim_next("w1")
    assert not control_plane.seal(first, snapshot_id=second.snapshot_id, document=stored_document("{}"))
    assert row(first.job_id)["stage"] == ""
    assert set(AnalysisSnapshot.objects.values_list("state", flat=True)) == {SnapshotState.BUILDING}


def test_seal_refuses_a_snapshot_that_is_no_longer_building_and_leaves_the_job_unsealed(db, control_plane, make_job):
    make_job()
    lease = control_plane.claim_next("w1")
    AnalysisSnapshot.objects.filter(pk=lease.snapshot_id).update(state=SnapshotState.FAILED)  # as no real path does
    assert not control_plane.seal(lease, snapshot_id=lease.snapshot_id, document=stored_document("{}"))
    assert row(lease.job_id)["stage"] == ""
    assert not control_plane.complete(lease)


def test_seal_loses_to_an_accepted_cancellation(db, control_plane, make_job):
    make_job()
    lease = control_plane.claim_next("w1")
    snapshot_id = lease.snapshot_id
    control_plane.request_cancel(lease.job_id)
    assert not control_plane.seal(lease, snapshot_id=snapshot_id, document=stored_document("{}"))
    snapshot = AnalysisSnapshot.objects.get(pk=snapshot_id)
    assert (snapshot.state, snapshot.content_hash) == (SnapshotState.BUILDING, "")
    assert control_plane.finish_cancelled(lease)
    assert AnalysisSnapshot.objects.get(pk=snapshot_id).state == SnapshotState.FAILED


def test_a_sealed_snapshot_wins_over_a_later_cancellation(db, control_plane, make_job):
    make_job()
    lease = control_plane.claim_next("w1")
    snapshot_id = lease.snapshot_id
    assert control_plane.seal(lease, snapshot_id=snapshot_id, document=stored_document("{}"))
    assert control_plane.request_cancel(lease.job_id) is CancelOutcome.REQUESTED
    assert control_plane.complete(lease)
    assert row(lease.job_id)["status"] == JobStatus.COMPLETED
    assert AnalysisSnapshot.objects.get(pk=snapshot_id).state == SnapshotState.SEALED


def test_update_owned_with_the_cancellation_guard_loses_to_a_cancellation(db, control_plane, make_job):
    make_job()
    lease = control_plane.claim_next("w1")
    assert control_plane.update_owned(lease, require_cancel_not_requested=True, stage="a")
    control_plane.request_cancel(lease.job_id)
    assert not control_plane.update_owned(lease, require_cancel_not_requested=True, stage="b")
    assert control_plane.update_owned(lease, stage="c")  # without the flag, the owner may still write
    assert row(lease.job_id)["stage"] == "c"


# -- failure, retry, hand-back ---------------------------------------------------------------------------------


def test_a_requeue_puts_the_job_back_with_its_backoff_and_error(db, control_plane, make_job, fake_clock):
    make_job()
    lease = control_plane.claim_next("w1")
    snapshot_id = lease.snapshot_id
    at = fake_clock.now() + dt.timedelta(seconds=4)
    assert control_plane.apply_failure(lease, Requeue(at=at, code=FAILED_CODE, message="ValueError: boom"))
    after = row(lease.job_id)
    assert (after["status"], after["worker_id"], after["lease_expires_at"], after["next_attempt_at"]) == (
        JobStatus.QUEUED, "", None, at,
    )
    assert (after["attempt"], after["error_code"], after["error_message"]) == (1, FAILED_CODE, "ValueError: boom")
    snapshot = AnalysisSnapshot.objects.get(pk=snapshot_id)
    assert (snapshot.state, snapshot.failure_code) == (SnapshotState.FAILED, FAILED_CODE)
    assert control_plane.claim_next("w1") is None
    fake_clock.advance(4)
    assert control_plane.claim_next("w1").attempt == 2


def test_a_fail_decision_ends_the_job_with_its_code(db, control_plane, make_job, fake_clock):
    make_job()
    lease = control_plane.claim_next("w1")
    assert control_plane.apply_failure(lease, Fail(code="RI-SOURCE-NOT-FOUND", message="gone"))
    after = row(lease.job_id)
    assert (after["status"], after["error_code"], after["error_message"]) == (JobStatus.FAILED, "RI-SOURCE-NOT-FOUND", "gone")
    assert (after["completed_at"], after["lease_expires_at"]) == (fake_clock.now(), None)
    assert AnalysisSnapshot.objects.get().failure_code == "RI-SOURCE-NOT-FOUND"


def test_hand_back_refunds_the_attempt_and_the_job_is_claimable_at_once(db, control_plane, make_job):
    make_job(max_attempts=1)
    lease = control_plane.claim_next("w1")
    snapshot_id = lease.snapshot_id
    assert control_plane.hand_back(lease)
    after = row(lease.job_id)
    assert (after["status"], after["attempt"], after["worker_id"], after["next_attempt_at"]) == (
        JobStatus.QUEUED, 0, "", None,
    )
    snapshot = AnalysisSnapshot.objects.get(pk=snapshot_id)
    assert (snapshot.state, snapshot.failure_code) == (SnapshotState.FAILED, HANDED_BACK_CODE)
    again = control_plane.claim_next("w2")  # its only attempt is still there
    assert (again.job_id, again.attempt) == (lease.job_id, 1)


# -- request_cancel --------------------------------------------------------------------------------------------


def test_request_cancel_cancels_a_queued_job_at_once(db, control_plane, make_job, fake_clock):
    job = make_job()
    assert control_plane.request_cancel(job.pk, by="alice") is CancelOutcome.CANCELLED
    after = row(job.pk)
    assert (after["status"], after["error_code"], after["completed_at"]) == (JobStatus.CANCELLED, CANCELLED_CODE, fake_clock.now())
    assert "alice" in after["error_message"]
    with pytest.raises(CancelRefused, match=f"Job {job.pk} is already cancelled"):
        control_plane.request_cancel(job.pk)
    assert row(job.pk) == after


def test_request_cancel_on_a_running_job_flags_it_and_is_idempotent(db, control_plane, make_job):
    make_job()
    lease = control_plane.claim_next("w1")
    assert control_plane.request_cancel(lease.job_id) is CancelOutcome.REQUESTED
    first = row(lease.job_id)
    assert (first["status"], first["cancel_requested"], first["worker_id"]) == (JobStatus.RUNNING, True, "w1")
    assert control_plane.request_cancel(lease.job_id) is CancelOutcome.REQUESTED
    assert row(lease.job_id) == first


@pytest.mark.parametrize("status", [JobStatus.COMPLETED, JobStatus.FAILED])
def test_request_cancel_refuses_a_finished_job_with_its_status(db, control_plane, make_job, fake_clock, status):
    lease, _ = _finish(control_plane, make_job, fake_clock, status)
    before = row(lease.job_id)
    with pytest.raises(CancelRefused, match=f"Job {lease.job_id} is already {status}"):
        control_plane.request_cancel(lease.job_id)
    assert row(lease.job_id) == before


def test_request_cancel_refuses_a_job_that_does_not_exist(db, control_plane):
    with pytest.raises(CancelRefused, match="Job 424242 does not exist"):
        control_plane.request_cancel(424242)


# -- enqueue ---------------------------------------------------------------------------------------------------


def test_enqueue_creates_a_queued_job(db, control_plane, fake_clock, source_dir):
    job, created = control_plane.enqueue(str(source_dir), revision="main", max_attempts=5)
    assert created
    after = row(job.pk)
    assert (after["status"], after["attempt"], after["max_attempts"], after["created_at"]) == (
        JobStatus.QUEUED, 0, 5, fake_clock.now(),
    )


@pytest.mark.parametrize("active", ["queued", "running"])
def test_enqueue_returns_the_active_job_of_the_same_source_and_revision(db, control_plane, source_dir, active):
    job, _ = control_plane.enqueue(str(source_dir), revision="main")
    if active == "running":
        control_plane.claim_next("w1")
    again, created = control_plane.enqueue(str(source_dir), revision="main")
    assert (again.pk, created) == (job.pk, False)
    other, created = control_plane.enqueue(str(source_dir), revision="dev")
    assert created and other.pk != job.pk
    assert AnalysisJob.objects.count() == 2


def test_enqueue_after_the_job_finished_creates_a_new_one(db, control_plane, source_dir):
    job, _ = control_plane.enqueue(str(source_dir))
    control_plane.request_cancel(job.pk)
    again, created = control_plane.enqueue(str(source_dir))
    assert created and again.pk != job.pk


@pytest.mark.parametrize("budget", [0, -1, 2**31])
def test_enqueue_refuses_an_attempt_budget_no_job_can_hold(db, control_plane, source_dir, budget):
    with pytest.raises(ValueError, match="attempt budget from 1 to"):
        control_plane.enqueue(str(source_dir), max_attempts=budget)
    with pytest.raises(ValueError, match="attempt budget from 1 to"):
        control_plane.enqueue_many([str(source_dir)], max_attempts=budget)
    assert not AnalysisJob.objects.exists()


def test_enqueue_raises_a_refusal_that_is_not_a_lost_race_instead_of_trying_forever(transactional_db, control_plane, source_dir, django_user_model):
    gone = django_user_model.objects.create(username="gone")
    django_user_model.objects.filter(pk=gone.pk).delete()  # the instance keeps its pk: the foreign key fails
    with pytest.raises(IntegrityError):
        control_plane.enqueue(str(source_dir), owner=gone)
    assert not AnalysisJob.objects.exists()


def test_two_enqueues_racing_past_the_duplicate_check_make_one_job(db, fake_clock, source_dir):
    rival = DatabaseControlPlane(clock=fake_clock, lease_seconds=LEASE)
    rival_result = []
    # The rival enqueues between this enqueue's duplicate check and its insert.
    cp = RacingControlPlane(
        lambda: rival_result.append(rival.enqueue(str(source_dir), revision="main")), clock=fake_clock, lease_seconds=LEASE
    )
    with CaptureQueriesContext(connection) as captured:
        job, created = cp.enqueue(str(source_dir), revision="main")
    inserts = [q for q in captured.captured_queries if q["sql"].startswith('INSERT INTO "analysis_jobs_analysisjob"')]
    assert len(inserts) == 2  # the race was real: both inserted, and the unique constraint refused the second
    [(rival_job, rival_created)] = rival_result
    assert rival_created and not created
    assert job.pk == rival_job.pk
    assert AnalysisJob.objects.count() == 1


@pytest.mark.postgres_only
def test_threads_enqueueing_one_source_at_once_make_one_job(transactional_db, fake_clock, source_dir):
    threads_count = 4
    barrier = threading.Barrier(threads_count)
    results, errors = [None] * threads_count, []

    class BarrierClock(FakeClock):
        def now(self):
            barrier.wait(timeout=30)  # every thread has passed the duplicate check; all insert at once
            return super().now()

    def enqueue(index):
        try:
            cp = DatabaseControlPlane(clock=BarrierClock(fake_clock.now()), lease_seconds=LEASE)
            results[index] = cp.enqueue(str(source_dir), revision="main")
        except BaseException as error:
            errors.append(error)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=enqueue, args=(i,)) for i in range(threads_count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len({job.pk for job, _ in results}) == 1
    assert sorted(created for _, created in results) == [False] * (threads_count - 1) + [True]
    assert AnalysisJob.objects.count() == 1


@pytest.mark.sqlite_only
def test_a_renewal_blocked_by_a_held_sqlite_lock_is_deferred_and_changes_nothing(transactional_db, control_plane, make_job):
    import sqlite3

    make_job()
    lease = control_plane.claim_next("w1")
    before = row(lease.job_id)
    options = connection.settings_dict["OPTIONS"]
    saved_timeout = options["timeout"]
    blocker = sqlite3.connect(connection.settings_dict["NAME"], isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    options["timeout"] = 0.05  # give up at once instead of waiting out the busy timeout
    connection.close()
    try:
        renewal = control_plane.renew(lease, stage="inventory")
    finally:
        blocker.rollback()
        blocker.close()
        options["timeout"] = saved_timeout
        connection.close()  # the next query reconnects with the normal busy timeout
    assert renewal.deferred and not renewal.lost and not renewal.cancel_requested
    assert row(lease.job_id) == before
    assert control_plane.renew(lease).renewed  # ownership was never in doubt


@pytest.mark.sqlite_only
@pytest.mark.parametrize("bulk", [False, True], ids=["enqueue", "enqueue_many"])
def test_a_job_waiting_for_the_sqlite_write_lock_is_stamped_when_it_gets_it(transactional_db, control_plane, fake_clock, bulk):
    import sqlite3

    blocker = sqlite3.connect(connection.settings_dict["NAME"], isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # a worker's claim holds the write lock
    waiting, results = threading.Event(), []

    def trace(sql):
        if sql.startswith("BEGIN IMMEDIATE"):
            waiting.set()

    def enqueue():
        try:
            connection.ensure_connection()
            connection.connection.set_trace_callback(trace)
            if bulk:
                results.extend(job for job, _ in control_plane.enqueue_many(["/src/a", "/src/b"]))
            else:
                results.append(control_plane.enqueue("/src/a")[0])
        finally:
            connections.close_all()

    thread = threading.Thread(target=enqueue)
    thread.start()
    try:
        assert waiting.wait(10)  # the enqueue is blocked on the lock now
        fake_clock.advance(5)
    finally:
        blocker.rollback()
        blocker.close()
    thread.join()

    # The job became visible to a poll only once the lock was free: it was not queued before that.
    assert {job.created_at for job in AnalysisJob.objects.all()} == {fake_clock.now()}
    assert len(results) == (2 if bulk else 1)
