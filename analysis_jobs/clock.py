"""The one source of time for the control plane, the worker and the runner, so tests can move it by hand."""

import datetime as dt
import threading
import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> dt.datetime:
        """Return the current time, timezone-aware."""

    def sleep(self, seconds: float) -> None:
        """Block for ``seconds``."""

    def wait(self, event: threading.Event, seconds: float) -> bool:
        """Block until ``event`` is set or ``seconds`` pass; return whether it was set."""


class SystemClock:
    """Wall-clock time."""

    def now(self) -> dt.datetime:
        return dt.datetime.now(dt.UTC)

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)

    def wait(self, event: threading.Event, seconds: float) -> bool:
        return event.wait(seconds)


class FakeClock:
    """A clock that moves only when told to; ``sleep`` advances it instead of blocking."""

    def __init__(self, start: dt.datetime | None = None):
        self._now = start or dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
        self._lock = threading.Lock()

    def now(self) -> dt.datetime:
        with self._lock:
            return self._now

    def advance(self, seconds: float) -> dt.datetime:
        with self._lock:
            self._now += dt.timedelta(seconds=seconds)
            return self._now

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            self.advance(seconds)

    def wait(self, event: threading.Event, seconds: float) -> bool:
        if not event.is_set():
            self.sleep(seconds)
        return event.is_set()
