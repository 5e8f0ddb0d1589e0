"""
Kill at every step, and the poison job. A worker is SIGKILLed by the fault hook (``ANALYSIS_FAULT_CHECKPOINT``)
at one checkpoint; a healthy worker then sweeps and finishes: the job ends completed, its attempt spent or
healed, with one sealed snapshot and one seal. A job that kills its worker on every attempt is quarantined as
``failed`` with ``RI-JOB-STALE`` once its attempts are spent, and no worker picks it up again.
"""

import signal

import pytest
from django.utils import timezone

from analysis_jobs.control_plane import DatabaseControlPlane
from analysis_jobs.decisions import STALE_CODE
from analysis_jobs.models import AnalysisJob, AnalysisSnapshot, JobStatus, SnapshotState
from analysis_jobs.pipeline import default_pipeline

from .harness import assert_clean_audit, make_source, queue_audit, seals_per_job, wait_until

STAGES = [stage.name for stage in default_pipeline().stages]
CHECKPOINTS = ["after-claim", *[f"after-stage:{name}" for name in STAGES], "after-seal", "during-heartbeat"]
FAULTY_LEASE = 0.5
HEALTHY_ENV = {"ANALYSIS_SWEEP_INTERVAL": "0.1", "ANALYSIS_RETRY_BASE_SECONDS": "0"}


def _lease_lapsed(job_id):
    job = AnalysisJob.objects.get(pk=job_id)
    return job.status != JobStatus.RUNNING or job.lease_expires_at < timezone.now()


def _run_faulty(workers, checkpoint, job_id, **env):
    """Run one worker that the hook kills at ``checkpoint``; return once its job's lease has lapsed."""
    faulty = workers.start(
        "--burst", "--poll-interval", "0", "--lease-seconds", str(FAULTY_LEASE),
        env={"ANALYSIS_FAULT_CHECKPOINT": checkpoint, **HEALTHY_ENV, **env},
    )
    code = faulty.wait(timeout=60)
    wait_until(lambda: _lease_lapsed(job_id), 30, what=f"job {job_id}'s lease to lapse")
    return faulty, code


@pytest.mark.process
@pytest.mark.parametrize("checkpoint", CHECKPOINTS)
def test_a_kill_at_each_checkpoint_ends_completed_once(workers, tmp_path, checkpoint):
    # Enough files that the heartbeat (every 10 ms here) beats while the inventory runs.
    source = make_source(tmp_path / "src", files=400)
    job, _ = DatabaseControlPlane().enqueue(str(source), max_attempts=3)

    faulty, code = _run_faulty(workers, checkpoint, job.pk, ANALYSIS_HEARTBEAT_SECONDS="0.01")
    assert code == -signal.SIGKILL, f"the hook did not fire at {checkpoint}:\n{faulty.log()[-3000:]}"
    died = AnalysisJob.objects.get(pk=job.pk)
    assert died.status == JobStatus.RUNNING and died.attempt == 1

    healthy = workers.start("--burst", "--poll-interval", "0", "--lease-seconds", "10", env=HEALTHY_ENV)
    assert healthy.wait(timeout=60) == 0, healthy.log()[-3000:]

    job.refresh_from_db()
    assert job.status == JobStatus.COMPLETED, (job.status, job.error_code, healthy.log()[-3000:])
    # Killed after its seal, the job is healed (no new attempt); killed before, it is run again once.
    assert job.attempt == (1 if checkpoint == "after-seal" else 2)
    assert job.error_code == ""
    assert_clean_audit(queue_audit())
    assert seals_per_job(workers.events()) == {job.pk: 1}
    reclaimed = [e for e in workers.events() if e["state"] == "reclaimed"]
    assert [int(e["job"]) for e in reclaimed] == [job.pk]
    # Every snapshot the dead attempt began was failed, not left building.
    assert not AnalysisSnapshot.objects.filter(state=SnapshotState.BUILDING).exists()


@pytest.mark.process
def test_a_job_that_kills_every_worker_is_quarantined_after_its_attempts(workers, tmp_path):
    source = make_source(tmp_path / "src")
    job, _ = DatabaseControlPlane().enqueue(str(source), max_attempts=3)
    checkpoint = f"after-stage:{STAGES[0]}"

    codes = []
    for _ in range(job.max_attempts + 2):  # a bound, so a crash loop fails the test instead of hanging it
        _, code = _run_faulty(workers, checkpoint, job.pk)
        codes.append(code)
        if code != -signal.SIGKILL:
            break
    # Three attempts died; the fourth worker swept the job to failed and, finding nothing eligible, exited cleanly.
    assert codes == [-signal.SIGKILL] * 3 + [0], codes

    job.refresh_from_db()
    assert job.status == JobStatus.FAILED
    assert job.error_code == STALE_CODE
    assert job.attempt == job.max_attempts == 3
    assert "attempt 3 of 3" in job.error_message and "no attempts left" in job.error_message
    assert AnalysisSnapshot.objects.filter(state=SnapshotState.SEALED).count() == 0
    assert not AnalysisSnapshot.objects.filter(state=SnapshotState.BUILDING).exists()

    # And it stays quarantined: a further worker, even a faulty one, does not touch it.
    _, code = _run_faulty(workers, checkpoint, job.pk)
    assert code == 0
    after = AnalysisJob.objects.get(pk=job.pk)
    assert (after.status, after.attempt, after.updated_at) == (job.status, job.attempt, job.updated_at)
