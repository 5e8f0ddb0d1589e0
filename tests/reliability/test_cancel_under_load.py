"""
Cancellation under load: cancellations issued at random moments while workers drain a queue are each honoured.
A job cancelled while queued never runs; a running job asked to stop ends cancelled, or completed only when its
seal committed before the request; no request is lost and no cancelled job has a sealed snapshot.
"""

import os
import random
import time

import pytest
from django.utils import timezone

from analysis_jobs.control_plane import CancelOutcome, DatabaseControlPlane
from analysis_jobs.exceptions import CancelRefused
from analysis_jobs.models import TERMINAL_STATUSES, AnalysisJob, JobStatus, SnapshotState

from .harness import assert_clean_audit, distinct_sources, queue_audit

JOBS = 120


@pytest.mark.process
def test_random_cancellations_are_each_honoured(workers, tmp_path):
    rng = random.Random(os.environ.get("PARTHA_SOAK_SEED", "cancel"))
    control_plane = DatabaseControlPlane()
    ids = [control_plane.enqueue(s, max_attempts=3)[0].pk for s in distinct_sources(tmp_path, JOBS, files=10, size=1 << 20)]
    env = {"ANALYSIS_SWEEP_INTERVAL": "0.5", "ANALYSIS_HEARTBEAT_SECONDS": "0.05"}
    pool = [workers.start("--poll-interval", "0.05", "--lease-seconds", "5", env=env) for _ in range(3)]

    requests = {}  # job id -> (outcome, wall-clock time the request had returned by)
    started = time.monotonic()
    while AnalysisJob.objects.exclude(status__in=TERMINAL_STATUSES).exists():
        assert time.monotonic() - started < 90, "the queue did not drain"
        time.sleep(rng.uniform(0, 0.1))
        running = list(AnalysisJob.objects.filter(status=JobStatus.RUNNING, cancel_requested=False).values_list("id", flat=True))
        # Half aimed at running jobs, where the cancellation races the worker's stages and its seal.
        candidates = running if running and rng.random() < 0.5 else [pk for pk in ids if pk not in requests]
        if not candidates:
            continue
        pk = rng.choice(candidates)
        try:
            outcome = control_plane.request_cancel(pk, by="fault-suite")
        except CancelRefused:
            outcome = None  # it finished first: nothing to honour
        requests.setdefault(pk, (outcome, timezone.now()))
    for worker in pool:
        assert worker.terminate() == 0

    assert_clean_audit(queue_audit())
    jobs = AnalysisJob.objects.select_related("snapshot").in_bulk(ids)
    asked = {pk: r for pk, r in requests.items() if r[0] is not None}
    assert sum(1 for o, _ in asked.values() if o is CancelOutcome.REQUESTED) >= 5, "too few cancellations hit running jobs"
    for pk, (outcome, returned_by) in asked.items():
        job = jobs[pk]
        if outcome is CancelOutcome.CANCELLED:
            assert job.status == JobStatus.CANCELLED and job.snapshot_id is None, (pk, job.status, job.attempt)
        elif job.status == JobStatus.COMPLETED:
            # The seal won the race: it committed before the request did.
            assert job.snapshot.state == SnapshotState.SEALED and job.snapshot.sealed_at <= returned_by, pk
        else:
            assert job.status == JobStatus.CANCELLED and job.error_code == "RI-JOB-CANCELLED", (pk, job.status)
            assert job.snapshot is None or job.snapshot.state == SnapshotState.FAILED
    for pk, job in jobs.items():
        if pk not in asked:
            assert job.status == JobStatus.COMPLETED, (pk, job.status, job.error_code)
