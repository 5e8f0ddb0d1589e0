"""
Wake-ups: how an idle runner learns that a job was queued, without polling the table.

On PostgreSQL an enqueue sends ``NOTIFY analysis_jobs`` inside its own transaction, so the notification is
delivered when the job commits (and never for one rolled back). An idle runner waits on a dedicated connection
that has run ``LISTEN analysis_jobs``; a notification ends the wait at once and the runner polls. The poll stays
the authority: a notification carries nothing, and one that is lost (the listening connection dropped, the
server restarted) only delays a job until the wait times out, one poll interval at most. So an idle runner makes
one query per poll interval, and the interval can be long.

On SQLite there is nothing to listen to: the runner sleeps the poll interval, as before.
"""

import logging
import os
import select
import threading

from django.conf import settings
from django.db import connections

from .clock import Clock, SystemClock

logger = logging.getLogger(__name__)

CHANNEL = "analysis_jobs"


def notifications_enabled(using: str = "default") -> bool:
    """Return True when enqueues notify and runners listen: PostgreSQL, unless the setting turns it off."""
    return connections[using].vendor == "postgresql" and settings.ANALYSIS_JOBS.get("NOTIFY", True)


def send_wakeup(using: str = "default", payload: str = "") -> None:
    """Send the wake-up on ``using``'s connection; inside a transaction it is delivered when that commits.

    ``payload`` (a job id, say) is for whoever reads the channel by hand; runners ignore it.
    """
    if notifications_enabled(using):
        with connections[using].cursor() as cursor:
            cursor.execute("SELECT pg_notify(%s, %s)", [CHANNEL, payload])


class PollWaiter:
    """Waits the whole poll interval: the fallback, and all there is on SQLite."""

    def __init__(self, clock: Clock | None = None):
        self.clock = clock or SystemClock()

    def wait(self, stopping: threading.Event, seconds: float) -> bool:
        """Block until ``stopping`` is set or ``seconds`` pass; return False (no wake-up was received)."""
        self.clock.wait(stopping, seconds)
        return False

    def wake(self) -> None:
        """Nothing to interrupt: the clock's wait watches the stop event itself."""

    def close(self) -> None:
        pass


class ListenWaiter:
    """Waits for a wake-up on its own ``LISTEN`` connection, or for the poll interval to pass.

    The connection is opened on first use and again after it fails; while it cannot be opened the waiter sleeps
    the interval like ``PollWaiter``. Right after (re)connecting it returns at once, because a job queued before
    the ``LISTEN`` took effect sent its notification to nobody. A connection lost within one interval of
    listening (a server or pooler that drops every connection) costs a wait of the interval too, or the runner
    would poll and reconnect without pause; one lost after that (a server restart) is reopened at once.
    """

    def __init__(self, using: str = "default", clock: Clock | None = None):
        self.using = using
        self.clock = clock or SystemClock()
        self._conn = None
        self._listening_since = None
        self._wake_r = self._wake_w = -1  # a self-pipe, so a signal handler can end a wait at once

    def _connect(self):
        import psycopg

        params = connections[self.using].get_connection_params()
        for key in ("cursor_factory", "context", "prepare_threshold", "server_side_binding"):
            params.pop(key, None)
        conn = psycopg.connect(**params, autocommit=True)
        conn.execute(f"LISTEN {CHANNEL}")
        return conn

    def wait(self, stopping: threading.Event, seconds: float) -> bool:
        """Block until a wake-up arrives, ``stopping`` is set (see ``wake``) or ``seconds`` pass.

        Return True when woken by a notification (or a fresh ``LISTEN``), False on a timeout or a stop.
        """
        if stopping.is_set():
            return False
        if self._wake_r < 0:
            self._wake_r, self._wake_w = os.pipe()
            os.set_blocking(self._wake_r, False)
            os.set_blocking(self._wake_w, False)
        if self._conn is None:
            try:
                self._conn = self._connect()
            except Exception as error:
                logger.warning("wakeups event=listen_unavailable error=%s", error.__class__.__name__)
                self.clock.wait(stopping, seconds)
                return False
            self._listening_since = self.clock.now()
            return True
        try:
            if self._drain():
                return True  # arrived while we were busy: poll once more
            readable, _, _ = select.select([self._conn.fileno(), self._wake_r], [], [], max(seconds, 0))
            if self._wake_r in readable:
                self._clear_wake()
            return self._drain() if self._conn.fileno() in readable else False
        except Exception as error:
            logger.warning("wakeups event=listen_lost error=%s", error.__class__.__name__)
            self.close_connection()
            if (self.clock.now() - self._listening_since).total_seconds() < seconds:
                self.clock.wait(stopping, seconds)
            return False

    def _drain(self) -> bool:
        """Read what the server sent and return whether it held at least one notification."""
        pgconn = self._conn.pgconn
        pgconn.consume_input()
        if pgconn.status != 0:  # CONNECTION_OK
            raise ConnectionError("the listening connection was closed")
        received = False
        while pgconn.notifies() is not None:
            received = True
        return received

    def _clear_wake(self) -> None:
        try:
            while os.read(self._wake_r, 64):
                pass
        except BlockingIOError:
            pass

    def wake(self) -> None:
        """End a wait now, from a signal handler or another thread (the runner calls it when told to stop)."""
        if self._wake_w < 0:
            return  # not waiting, and never was
        try:
            os.write(self._wake_w, b"x")
        except (BlockingIOError, OSError):
            pass  # one is already pending, or the waiter closed meanwhile

    def close_connection(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except Exception:
                pass
            self._conn = None

    def close(self) -> None:
        """Close the connection and the self-pipe; a later ``wait`` opens them again."""
        self.close_connection()
        for fd in (self._wake_r, self._wake_w):
            try:
                os.close(fd)
            except OSError:
                pass
        self._wake_r = self._wake_w = -1


def waiter_for(using: str = "default", clock: Clock | None = None) -> PollWaiter | ListenWaiter:
    """Return the waiter an idle runner uses on ``using``: listen on PostgreSQL, sleep otherwise.

    A clock that is not the system clock (a test's fake clock) always gets ``PollWaiter``, so fake time stays in
    charge of every wait.
    """
    if notifications_enabled(using) and (clock is None or isinstance(clock, SystemClock)):
        return ListenWaiter(using, clock)
    return PollWaiter(clock)
