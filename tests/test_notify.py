"""Wake-ups: enqueue notifies on commit, an idle runner listens, and the poll catches what a lost one missed."""

import datetime as dt
import threading

import psycopg
import pytest
from django.db import connection, connections, transaction

from analysis_jobs.clock import SystemClock
from analysis_jobs.control_plane import DatabaseControlPlane
from analysis_jobs.models import AnalysisJob, JobStatus
from analysis_jobs.notifications import CHANNEL, ListenWaiter, PollWaiter, waiter_for
from analysis_jobs.runner import AnalysisWorkerRunner
from analysis_jobs.worker import AnalysisWorker
from tests.noop_pipeline import NoopPipeline

pytestmark = pytest.mark.django_db


def _listener():
    params = connection.get_connection_params()
    for key in ("cursor_factory", "context", "prepare_threshold"):
        params.pop(key, None)
    listener = psycopg.connect(**params, autocommit=True)
    listener.execute(f"LISTEN {CHANNEL}")
    return listener


def _next_payload(listener, timeout=10.0):
    for notification in listener.notifies(timeout=timeout, stop_after=1):
        return notification.payload
    return None


class FakeWaiter:
    """Stands in for the wake-up wait: runs ``during`` once per wait, then lets the fake clock pass the interval."""

    def __init__(self, clock, during, stop_after):
        self.clock, self.during, self.stop_after, self.waits = clock, during, stop_after, 0

    def wait(self, stopping, seconds):
        self.waits += 1
        self.during(self.waits)
        self.clock.advance(seconds)
        if self.waits >= self.stop_after:
            stopping.set()
        return False

    def wake(self):
        pass

    def close(self):
        pass


def _runner(control_plane, clock, waiter, **options):
    worker = AnalysisWorker(control_plane, pipeline=NoopPipeline(), clock=clock)
    return AnalysisWorkerRunner(control_plane=control_plane, worker=worker, clock=clock, waiter=waiter, **options)


# -- every engine ------------------------------------------------------------------------------------------------


def test_a_lost_notification_delays_a_job_by_one_poll_interval_at_most(control_plane, make_job, fake_clock):
    """A job whose wake-up never arrives (inserted behind the queue's back) is claimed at the next poll."""
    queued = {}

    def enqueue_without_wakeup(wait_number):
        if wait_number == 1:
            queued["job"] = make_job(created_at=fake_clock.now())

    waiter = FakeWaiter(fake_clock, enqueue_without_wakeup, stop_after=3)
    runner = _runner(control_plane, fake_clock, waiter, poll_interval=5, sweep_interval=3600, max_jobs=1)

    report = runner.run()

    job = AnalysisJob.objects.get(pk=queued["job"].pk)
    assert report.jobs == 1 and job.status == JobStatus.COMPLETED
    assert job.started_at - job.created_at <= dt.timedelta(seconds=5)
    assert waiter.waits == 1  # claimed at the first poll after the wait, without a second interval


def test_an_idle_runner_makes_one_query_per_poll_interval_its_sweeps_included(control_plane, fake_clock, django_assert_num_queries):
    waiter = FakeWaiter(fake_clock, lambda n: None, stop_after=10)
    runner = _runner(control_plane, fake_clock, waiter, poll_interval=5, sweep_interval=5)

    # Ten intervals, a sweep due at each. On PostgreSQL each claim poll also saw that no lease had lapsed, which
    # is all the sweep would have asked: ten statements. SQLite polls and sweeps: twenty.
    with django_assert_num_queries(10 if connection.vendor == "postgresql" else 20):
        runner.run()
    assert waiter.waits == 10


def test_a_fake_clock_or_sqlite_gets_the_poll_waiter(fake_clock):
    assert isinstance(waiter_for("default", fake_clock), PollWaiter)
    expected = ListenWaiter if connection.vendor == "postgresql" else PollWaiter
    assert isinstance(waiter_for("default", SystemClock()), expected)


def test_the_poll_waiter_waits_the_interval_on_its_clock(fake_clock):
    start = fake_clock.now()

    assert PollWaiter(fake_clock).wait(threading.Event(), 5) is False
    assert fake_clock.now() - start == dt.timedelta(seconds=5)


# -- PostgreSQL: real notifications ------------------------------------------------------------------------------


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_enqueue_notifies_when_it_commits_and_never_for_a_rollback(source_dir, tmp_path):
    listener = _listener()
    control_plane = DatabaseControlPlane()
    try:
        with pytest.raises(RuntimeError), transaction.atomic():
            control_plane.enqueue(str(tmp_path))
            raise RuntimeError("roll back")
        with transaction.atomic():
            job, _ = control_plane.enqueue(str(source_dir))
            # Notifications travel with the transaction: nothing is delivered before the commit.
            assert list(listener.notifies(timeout=0.01)) == []

        assert _next_payload(listener) == str(job.pk)  # the first one delivered: the rolled-back one never was
    finally:
        listener.close()


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_bulk_enqueue_notifies_once_per_chunk(source_dir, tmp_path):
    listener = _listener()
    try:
        paths = [str(tmp_path / f"s{i}") for i in range(5)]
        results = DatabaseControlPlane().enqueue_many(paths, chunk_size=2)

        payloads = [n.payload for n in listener.notifies(timeout=10, stop_after=3)]
        assert payloads == [str(results[i][0].pk) for i in (0, 2, 4)]
    finally:
        listener.close()


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_the_listen_waiter_wakes_on_a_notification_and_times_out_without_one(source_dir):
    waiter = ListenWaiter()
    stopping = threading.Event()
    try:
        assert waiter.wait(stopping, 0) is True  # just started listening: poll once, something may be waiting
        assert waiter.wait(stopping, 0.01) is False  # nothing sent

        DatabaseControlPlane().enqueue(str(source_dir))

        assert waiter.wait(stopping, 30) is True
        assert waiter.wait(stopping, 0.01) is False  # consumed: the same wake-up does not count twice
    finally:
        waiter.close()


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_a_dropped_listen_connection_falls_back_to_the_poll_and_listens_again(source_dir, fake_clock):
    waiter = ListenWaiter(clock=fake_clock)
    stopping = threading.Event()
    try:
        assert waiter.wait(stopping, 0) is True
        listening_pid = waiter._conn.info.backend_pid
        fake_clock.advance(3600)  # listening for an hour, then the server restarts
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(%s)", [listening_pid])

        before = fake_clock.now()
        assert waiter.wait(stopping, 5) is False  # the wait ends as a timeout would: the runner polls
        assert fake_clock.now() == before  # and reconnects at once
        # The next waits notice the closed socket (the server's goodbye and the end of the stream can arrive
        # apart), reconnect and listen again; a fresh LISTEN says so by returning True.
        assert any(waiter.wait(stopping, 1) for _ in range(3))
        assert waiter._conn.info.backend_pid != listening_pid
        DatabaseControlPlane().enqueue(str(source_dir))
        assert waiter.wait(stopping, 30) is True
    finally:
        waiter.close()


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_a_listen_connection_dropped_as_soon_as_it_listens_costs_a_poll_interval_not_a_busy_loop(fake_clock):
    waiter = ListenWaiter(clock=fake_clock)
    stopping = threading.Event()
    try:
        for _ in range(2):  # a server (or pooler) that drops every connection at once
            assert waiter.wait(stopping, 0) is True
            listening_pid = waiter._conn.info.backend_pid
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_terminate_backend(%s)", [listening_pid])
            before = fake_clock.now()
            while waiter._conn is not None:  # the goodbye and the end of the stream can arrive apart
                assert waiter.wait(stopping, 5) is False
            assert (fake_clock.now() - before).total_seconds() == 5  # one interval's wait, as the poll makes
    finally:
        waiter.close()


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_wake_ends_a_wait_at_once():
    waiter = ListenWaiter()
    stopping = threading.Event()
    assert waiter.wait(stopping, 0) is True
    entered, result = threading.Event(), {}

    def wait_long():
        entered.set()
        result["woken"] = waiter.wait(stopping, 300)

    thread = threading.Thread(target=wait_long)
    thread.start()
    try:
        assert entered.wait(30)
        stopping.set()
        waiter.wake()
        thread.join(30)
        assert not thread.is_alive() and result["woken"] is False
    finally:
        stopping.set()
        waiter.wake()
        thread.join(30)
        waiter.close()


@pytest.mark.postgres_only
@pytest.mark.django_db(transaction=True)
def test_an_idle_runner_is_woken_by_an_enqueue_long_before_its_poll_interval(source_dir):
    """The runner waits with a 300 s poll interval; the job it is woken for finishes within the test's timeout."""

    class RecordingWaiter(ListenWaiter):
        def __init__(self):
            super().__init__()
            self.listening = threading.Event()

        def wait(self, stopping, seconds):
            if self._conn is not None:
                self.listening.set()  # listening already: this is the long wait
            return super().wait(stopping, seconds)

    waiter = RecordingWaiter()
    control_plane = DatabaseControlPlane()
    runner = _runner(control_plane, SystemClock(), waiter, poll_interval=300, sweep_interval=3600, max_jobs=1)

    def run():
        try:
            runner.run()
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    try:
        assert waiter.listening.wait(30)
        job, _ = control_plane.enqueue(str(source_dir))
        thread.join(60)
        assert not thread.is_alive()
    finally:
        if thread.is_alive():  # a stop request on a runner that has ended would leave its grace timer running
            runner.request_stop()
            thread.join(30)

    job.refresh_from_db()
    assert job.status == JobStatus.COMPLETED
    assert job.started_at - job.created_at < dt.timedelta(seconds=30)
