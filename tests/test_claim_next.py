"""claim_next: oldest eligible first, one query when idle, and (PostgreSQL) locked candidates skipped, not awaited."""

import datetime as dt
import threading

import pytest
from django.db import connection, connections, transaction

from analysis_jobs.control_plane import DatabaseControlPlane
from analysis_jobs.models import AnalysisJob, JobStatus

pytestmark = pytest.mark.django_db


def test_claims_the_oldest_eligible_job_first(control_plane, make_job, fake_clock):
    now = fake_clock.now()
    newest = make_job(created_at=now)
    oldest = make_job(created_at=now - dt.timedelta(seconds=2))
    middle = make_job(created_at=now - dt.timedelta(seconds=1))

    claimed = [control_plane.claim_next(f"w{i}").job_id for i in range(3)]

    assert claimed == [oldest.pk, middle.pk, newest.pk]
    assert control_plane.claim_next("w3") is None


def test_skips_jobs_in_backoff_or_out_of_attempts(control_plane, make_job, fake_clock):
    make_job(next_attempt_at=fake_clock.now() + dt.timedelta(seconds=10))
    make_job(attempt=3, max_attempts=3)
    ready = make_job()

    lease = control_plane.claim_next("w")

    assert lease.job_id == ready.pk and lease.attempt == 1
    assert control_plane.claim_next("w") is None


def test_the_claim_writes_the_lease(control_plane, make_job, fake_clock):
    job = make_job()

    lease = control_plane.claim_next("worker-a")

    job.refresh_from_db()
    assert (job.status, job.worker_id, job.attempt) == (JobStatus.RUNNING, "worker-a", 1)
    assert job.lease_expires_at == lease.expires_at == fake_clock.now() + dt.timedelta(seconds=30)
    assert job.started_at == fake_clock.now()


def test_an_idle_poll_is_one_query(control_plane, make_job, fake_clock, django_assert_num_queries):
    make_job(status=JobStatus.CANCELLED, completed_at=fake_clock.now())  # rows that are not eligible
    make_job(next_attempt_at=fake_clock.now() + dt.timedelta(seconds=60))

    with django_assert_num_queries(1):
        assert control_plane.claim_next("w") is None


def test_a_claim_is_one_statement_on_postgresql_and_a_short_write_transaction_on_sqlite(
    control_plane, make_job, django_assert_num_queries
):
    make_job()
    # SQLite: the idle check, then (in a savepoint here, BEGIN IMMEDIATE outside a test) the read, the claim and
    # the snapshot's insert and attachment.
    expected = 1 if connection.vendor == "postgresql" else 7

    with django_assert_num_queries(expected):
        assert control_plane.claim_next("w") is not None


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_a_candidate_locked_by_another_transaction_is_skipped_not_awaited(make_job, fake_clock):
    """While another transaction holds the oldest job's row lock, claim_next takes the next one at once."""
    oldest = make_job(created_at=fake_clock.now() - dt.timedelta(seconds=1))
    second = make_job()
    locked, release, result = threading.Event(), threading.Event(), {}

    def hold_the_oldest():
        try:
            with transaction.atomic():
                AnalysisJob.objects.select_for_update().filter(pk=oldest.pk).get()
                locked.set()
                release.wait(30)
        finally:
            connections.close_all()

    holder = threading.Thread(target=hold_the_oldest)
    holder.start()
    try:
        assert locked.wait(30)
        with connection.cursor() as cursor:
            cursor.execute("SET lock_timeout = '5s'")  # a claim that waited for the lock would fail, not hang
        lease = DatabaseControlPlane(clock=fake_clock).claim_next("w")
        result["job"] = lease.job_id if lease else None
    finally:
        release.set()
        holder.join(30)

    assert result["job"] == second.pk
    assert AnalysisJob.objects.get(pk=oldest.pk).status == JobStatus.QUEUED


@pytest.mark.django_db(transaction=True)
def test_concurrent_workers_each_claim_a_job_exactly_once(make_job, fake_clock):
    jobs = [make_job() for _ in range(24)]
    workers = 4
    barrier = threading.Barrier(workers)
    claimed: dict[str, list[int]] = {}

    def drain(name):
        control_plane = DatabaseControlPlane(clock=fake_clock)
        mine = claimed.setdefault(name, [])
        try:
            barrier.wait(30)
            while (lease := control_plane.claim_next(name, tries=10)) is not None:
                mine.append(lease.job_id)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=drain, args=(f"w{i}",)) for i in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)

    everything = [job_id for ids in claimed.values() for job_id in ids]
    assert sorted(everything) == sorted(job.pk for job in jobs)  # every job once, none twice
    assert set(AnalysisJob.objects.values_list("status", flat=True)) == {JobStatus.RUNNING}
    owners = dict(AnalysisJob.objects.values_list("pk", "worker_id"))
    assert all(owners[job_id] == name for name, ids in claimed.items() for job_id in ids)
