"""
Real ``runworker`` processes for the fault suite: start them, kill, pause and resume them, and read their logs.

Every assertion in the suite waits on the database (``wait_until`` with a deadline), never on a fixed sleep.
"""

import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from django.db.models import Q

from analysis_jobs.models import AnalysisJob, AnalysisSnapshot, JobStatus, SnapshotState, TERMINAL_STATUSES

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent

# One fixed shape per event (STYLE.md), so the suite can read what each worker did from its log.
JOB_EVENT = re.compile(r"job id=(?P<job>\d+) attempt=(?P<attempt>\d+) stage=(?P<stage>\S*) state=(?P<state>\w+) worker=(?P<worker>\S+)")


def wait_until(predicate, timeout: float, *, interval: float = 0.05, what: str = "the condition"):
    """Poll ``predicate`` until it returns something truthy and return that; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


@dataclass
class WorkerProcess:
    """One ``runworker`` subprocess and the file its output goes to."""

    popen: subprocess.Popen
    log_path: Path
    argv: list[str] = field(default_factory=list)

    @property
    def pid(self) -> int:
        return self.popen.pid

    def owns(self):
        """A filter for the jobs this process's worker id is on (``host:pid:random``)."""
        return Q(worker_id__contains=f":{self.pid}:")

    def alive(self) -> bool:
        return self.popen.poll() is None

    def kill(self) -> int:
        """SIGKILL the process and reap it; return its exit status."""
        if self.alive():
            self.popen.send_signal(signal.SIGKILL)
        return self.popen.wait(timeout=30)

    def pause(self) -> None:
        self.popen.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        self.popen.send_signal(signal.SIGCONT)

    def wait_started(self, timeout: float = 30) -> None:
        """Wait until the worker has installed its signal handlers and entered its loop."""
        wait_until(lambda: "event=started" in self.log() or not self.alive(), timeout, what=f"worker {self.pid} to start")

    def terminate(self, timeout: float = 30) -> int:
        """Stop the worker as a supervisor would (SIGTERM once it is running) and return its exit status."""
        self.wait_started()
        if self.alive():
            self.popen.send_signal(signal.SIGTERM)
        return self.popen.wait(timeout=timeout)

    def wait(self, timeout: float = 60) -> int:
        return self.popen.wait(timeout=timeout)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def events(self) -> list[dict]:
        return [m.groupdict() for m in JOB_EVENT.finditer(self.log())]


class WorkerPool:
    """Starts worker processes for one test and makes sure none outlives it."""

    def __init__(self, env: dict, manage_py: list[str], log_dir: Path):
        self.base_env = dict(env, PYTHONUNBUFFERED="1", ANALYSIS_LOG_LEVEL="INFO")
        self.manage_py = manage_py
        self.log_dir = log_dir
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.started: list[WorkerProcess] = []

    def start(self, *args: str, env: dict | None = None, stage: str | None = None) -> WorkerProcess:
        """Start ``runworker ARGS``; with ``stage``, run it with a test stage in front (see ``stage_worker``)."""
        run_env = dict(self.base_env, **(env or {}))
        if stage is None:
            argv = [*self.manage_py, "runworker", *args]
        else:
            run_env["PARTHA_TEST_STAGE"] = stage
            argv = [sys.executable, str(HERE / "stage_worker.py"), *args]
        log_path = self.log_dir / f"worker-{len(self.started):03d}.log"
        with open(log_path, "wb") as out:
            popen = subprocess.Popen(argv, env=run_env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        worker = WorkerProcess(popen, log_path, argv)
        self.started.append(worker)
        return worker

    def alive(self) -> list[WorkerProcess]:
        return [w for w in self.started if w.alive()]

    def events(self) -> list[dict]:
        return [event for worker in self.started for event in worker.events()]

    def logs(self) -> str:
        return "\n".join(worker.log() for worker in self.started)

    def close(self) -> None:
        for worker in self.started:
            if worker.alive():
                worker.resume()  # a stopped process cannot act on SIGKILL until it runs again on some kernels
                worker.kill()


def seals_per_job(events: list[dict]) -> Counter:
    """Count the ``state=sealed`` log events per job id across all workers."""
    return Counter(int(e["job"]) for e in events if e["state"] == "sealed")


def queue_audit() -> dict:
    """Return the whole-queue figures every fault test checks: terminal, completed, sealed snapshots, duplicates."""
    jobs = list(AnalysisJob.objects.values("id", "status", "snapshot_id", "snapshot__state"))
    completed = [j for j in jobs if j["status"] == JobStatus.COMPLETED]
    sealed_ids = set(AnalysisSnapshot.objects.filter(state=SnapshotState.SEALED).values_list("id", flat=True))
    completed_snapshots = [j["snapshot_id"] for j in completed]
    return {
        "jobs": len(jobs),
        "not_terminal": sorted(j["id"] for j in jobs if j["status"] not in TERMINAL_STATUSES),
        "completed": len(completed),
        "completed_without_sealed_snapshot": sorted(j["id"] for j in completed if j["snapshot__state"] != SnapshotState.SEALED),
        "sealed_snapshots": len(sealed_ids),
        # a sealed snapshot no completed job points at: a second seal, or a seal whose job went another way
        "orphan_sealed_snapshots": sorted(sealed_ids - set(completed_snapshots)),
        "shared_snapshots": len(completed_snapshots) - len(set(completed_snapshots)),
        "building_snapshots_of_terminal_jobs": AnalysisSnapshot.objects.filter(
            state=SnapshotState.BUILDING, jobs__status__in=TERMINAL_STATUSES
        ).count(),
    }


def assert_clean_audit(audit: dict) -> None:
    assert audit["not_terminal"] == [], audit
    assert audit["completed_without_sealed_snapshot"] == [], audit
    assert audit["orphan_sealed_snapshots"] == [], audit
    assert audit["shared_snapshots"] == 0, audit
    assert audit["sealed_snapshots"] == audit["completed"], audit
    assert audit["building_snapshots_of_terminal_jobs"] == 0, audit


def make_source(root: Path, files: int = 3, size: int = 0) -> Path:
    """Create a directory to analyse with ``files`` Python files, each padded to ``size`` bytes if given."""
    root.mkdir(parents=True, exist_ok=True)
    for index in range(files):
        text = f"VALUE = {index}\n"
        (root / f"m{index:04d}.py").write_text(text + "#" * max(0, size - len(text) - 1) + ("\n" if size else ""))
    return root


def distinct_sources(tmp_path: Path, count: int, files: int = 3, size: int = 0) -> list[str]:
    """Return ``count`` source directories, each with its own small file and ``files`` shared files of ``size`` bytes.

    The queue allows one active job per source, and a source whose identity already has a sealed snapshot
    would reuse it, so every job gets its own directory; the shared files are hard links, so the set-up stays
    cheap however much each job has to read.
    """
    shared = tmp_path / "shared"
    shared.mkdir(exist_ok=True)
    blobs = []
    for index in range(files):
        blob = shared / f"blob{index:03d}.dat"
        blob.write_bytes(f"{index}\n".encode().ljust(max(size, 2), b"x"))
        blobs.append(blob)
    paths = []
    for index in range(count):
        root = tmp_path / "sources" / f"s{index:04d}"
        root.mkdir(parents=True)
        (root / "own.py").write_text(f"SOURCE = {index}\n")
        for blob in blobs:
            os.link(blob, root / blob.name)
        paths.append(str(root))
    return paths


def engine() -> str:
    from django.db import connection

    return connection.vendor
