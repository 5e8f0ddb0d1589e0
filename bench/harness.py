"""What every workload shares: worker processes, watching a count climb, and the statistics of repeated runs."""

import os
import signal
import statistics
import subprocess
import sys
import threading
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


class TreeMemory:
    """The peak resident memory of a process and its descendants together, sampled from ``/proc`` every ``interval`` s.

    A process's own ``ru_maxrss`` is exact but counts it alone (and a waited-for child's peak replaces, not adds
    to, its own): a worker that parses over processes of its own is measured by this instead. Pages the
    processes share are counted once in each, so the figure errs high.
    """

    def __init__(self, pid: int, interval: float = 0.05):
        self.pid, self.interval, self.peak = pid, interval, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def stop(self) -> int:
        """Stop sampling; return the peak in bytes."""
        self._stop.set()
        self._thread.join()
        return self.peak

    def _sample(self) -> None:
        page = os.sysconf("SC_PAGE_SIZE")
        while not self._stop.wait(self.interval):
            self.peak = max(self.peak, sum(_rss_pages(pid) for pid in _tree(self.pid)) * page)


def _tree(root: int) -> list[int]:
    children = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as handle:
                    parent = int(handle.read().rpartition(")")[2].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(parent, []).append(int(name))
    tree, pending = [], [root]
    while pending:
        pid = pending.pop()
        tree.append(pid)
        pending.extend(children.get(pid, ()))
    return tree


def _rss_pages(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as handle:
            return int(handle.read().split()[1])
    except (OSError, ValueError, IndexError):
        return 0


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


STEADY = (0.2, 0.9)  # the fractions of a queue between which a drain's rate is taken: start-up and tail left out


@dataclass
class Progress:
    """Samples of (seconds since start, jobs done) taken while workers drained a queue, and the CPU ticks at the
    two samples that open and close the steady window (the only ones that need them)."""

    samples: list[tuple[float, int]] = field(default_factory=list)
    ticks: dict[int, tuple[int, int]] = field(default_factory=dict)  # sample index -> cpu_ticks()

    def steady_window(self, total: int) -> tuple[int, int] | None:
        """The indexes of the first samples at the ``STEADY`` fractions of ``total``."""
        found = []
        for fraction in STEADY:
            wanted = int(total * fraction)
            found.append(next((index for index, (_, count) in enumerate(self.samples) if count >= wanted), None))
        a, b = found
        if a is None or b is None or self.samples[b][0] <= self.samples[a][0]:
            return None
        return a, b

    def steady_rate(self, total: int) -> float | None:
        """Jobs per second over the steady window."""
        window = self.steady_window(total)
        if window is None:
            return None
        (ta, ca), (tb, cb) = self.samples[window[0]], self.samples[window[1]]
        return (cb - ca) / (tb - ta)

    def steady_cpu_busy(self, total: int) -> float | None:
        """The share of all cores' time that was busy over the steady window (the bench's own polling included)."""
        window = self.steady_window(total)
        if window is None or not all(index in self.ticks for index in window):
            return None
        (busy_a, total_a), (busy_b, total_b) = self.ticks[window[0]], self.ticks[window[1]]
        return (busy_b - busy_a) / (total_b - total_a) if total_b > total_a else None

    @property
    def finished_after(self) -> float | None:
        return self.samples[-1][0] if self.samples else None


def watch(done, total: int, *, timeout: float, interval: float = 0.005, alive=None) -> Progress:
    """Call ``done()`` every ``interval`` seconds until it reaches ``total``; raise after ``timeout`` seconds."""
    progress = Progress()
    marks = [int(total * fraction) for fraction in STEADY]
    start = time.monotonic()
    while True:
        count = done()
        now = time.monotonic() - start
        progress.samples.append((now, count))
        while marks and count >= marks[0]:
            progress.ticks[len(progress.samples) - 1] = cpu_ticks()
            marks.pop(0)
        if count >= total:
            return progress
        if now > timeout:
            raise TimeoutError(f"only {count} of {total} jobs done after {timeout:.0f} s")
        if alive is not None and not alive():
            raise RuntimeError(f"the workers exited with {count} of {total} jobs done")
        time.sleep(interval)
