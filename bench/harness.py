"""What every workload shares: worker processes, watching a count climb, and the statistics of repeated runs."""

import os
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "var" / "bench"


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def percentile(values, q):
    """Return the ``q`` quantile (0..1) of ``values`` by the nearest-rank method."""
    values = sorted(values)
    if not values:
        return None
    rank = max(1, min(len(values), round(q * len(values) + 0.5)))
    return values[rank - 1]


def base_env(**extra) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
    env.pop("DJANGO_SETTINGS_MODULE", None)
    env.update({k: str(v) for k, v in extra.items()})
    return env


@dataclass
class Process:
    popen: subprocess.Popen
    log: Path

    def stop(self, timeout: float = 15) -> int:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                return self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self.popen.kill()
        return self.popen.wait()

    def text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


def spawn(argv, env, name) -> Process:
    OUT.mkdir(parents=True, exist_ok=True)
    log = OUT / f"{name}.log"
    handle = open(log, "wb")
    popen = subprocess.Popen(argv, env=env, cwd=ROOT, stdout=handle, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    handle.close()
    return Process(popen, log)


def manage(*args) -> list[str]:
    return [sys.executable, str(ROOT / "manage.py"), *args]


def cpu_ticks() -> tuple[int, int]:
    """Return (busy, total) clock ticks of all cores since boot, from ``/proc/stat`` ((0, 0) where there is none)."""
    try:
        with open("/proc/stat") as handle:
            fields = [int(value) for value in handle.readline().split()[1:]]
    except OSError:
        return 0, 0
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    total = sum(fields[:8])  # guest time is already counted in user time
    return total - idle, total


@dataclass
class Progress:
    """Samples of (seconds since start, jobs done, CPU ticks) taken while workers drained a queue."""

    samples: list[tuple[float, int, tuple[int, int]]] = field(default_factory=list)

    def sample_at(self, count: int):
        for sample in self.samples:
            if sample[1] >= count:
                return sample
        return None

    def steady_window(self, total: int, low: float = 0.2, high: float = 0.9):
        """The first samples at the ``low`` and ``high`` fractions of ``total``: start-up and tail left out."""
        a, b = self.sample_at(int(total * low)), self.sample_at(int(total * high))
        if a is None or b is None or b[0] <= a[0]:
            return None
        return a, b

    def steady_rate(self, total: int) -> float | None:
        """Jobs per second over the steady window."""
        window = self.steady_window(total)
        if window is None:
            return None
        a, b = window
        return (b[1] - a[1]) / (b[0] - a[0])

    def steady_cpu_busy(self, total: int) -> float | None:
        """The share of all cores' time that was busy over the steady window (the bench's own polling included)."""
        window = self.steady_window(total)
        if window is None:
            return None
        (busy_a, total_a), (busy_b, total_b) = window[0][2], window[1][2]
        return (busy_b - busy_a) / (total_b - total_a) if total_b > total_a else None

    @property
    def finished_after(self) -> float | None:
        return self.samples[-1][0] if self.samples else None


def watch(done, total: int, *, timeout: float, interval: float = 0.005, alive=None) -> Progress:
    """Call ``done()`` every ``interval`` seconds until it reaches ``total``; raise after ``timeout`` seconds."""
    progress = Progress()
    start = time.monotonic()
    while True:
        count = done()
        now = time.monotonic() - start
        progress.samples.append((now, count, cpu_ticks()))
        if count >= total:
            return progress
        if now > timeout:
            raise TimeoutError(f"only {count} of {total} jobs done after {timeout:.0f} s")
        if alive is not None and not alive():
            raise RuntimeError(f"the workers exited with {count} of {total} jobs done")
        time.sleep(interval)
