"""
Zombie fencing and the starved worker. A worker paused with SIGSTOP until another worker reclaims and finishes
its job writes nothing more after SIGCONT (its guard refuses every write), logs the lost lease and goes back to
claiming. A worker whose stage hogs the CPU keeps its lease through its heartbeat: no false reclaim.
"""

import pytest

from analysis_jobs.control_plane import DatabaseControlPlane
from analysis_jobs.models import AnalysisJob, AnalysisSnapshot, JobStatus

from .harness import make_source, seals_per_job, wait_until

LEASE = 1.0
RESCUER_ENV = {"ANALYSIS_SWEEP_INTERVAL": "0.1", "ANALYSIS_RETRY_BASE_SECONDS": "0"}


def _rows():
    """Everything a stray write could change: every job row and every snapshot row."""
    return (
        list(AnalysisJob.objects.order_by("pk").values()),
        list(AnalysisSnapshot.objects.order_by("pk").values()),
    )


@pytest.mark.process
def test_a_paused_worker_writes_nothing_after_resuming_and_claims_again(workers, tmp_path):
    control_plane = DatabaseControlPlane()
    first, _ = control_plane.enqueue(str(make_source(tmp_path / "a")))
    zombie = workers.start("--poll-interval", "0.05", "--lease-seconds", str(LEASE), env=RESCUER_ENV, stage="hold")
    wait_until(
        lambda: AnalysisJob.objects.filter(zombie.owns(), pk=first.pk, stage="test-hold").exists(), 30,
        what="the zombie to be inside its job",
    )
    zombie.pause()

    rescuer = workers.start("--poll-interval", "0.05", "--lease-seconds", "10", env=RESCUER_ENV)
    wait_until(
        lambda: AnalysisJob.objects.filter(rescuer.owns(), pk=first.pk, status=JobStatus.COMPLETED).exists(), 60,
        what="the rescuer to reclaim and complete the job",
    )
    assert rescuer.terminate() == 0  # so the next job can only go to the zombie
    before = _rows()

    zombie.resume()
    wait_until(lambda: "state=abandoned" in zombie.log(), 30, what="the zombie to notice it lost the lease")
    assert _rows() == before, "the paused worker wrote after it lost its lease"
    zombie_events = [e for e in zombie.events() if int(e["job"]) == first.pk]
    assert {e["state"] for e in zombie_events} <= {"claimed", "running", "lease_lost", "abandoned"}, zombie_events

    # Back to claiming: the zombie takes the next job and finishes it.
    second, _ = control_plane.enqueue(str(make_source(tmp_path / "b")))
    wait_until(
        lambda: AnalysisJob.objects.filter(zombie.owns(), pk=second.pk, status=JobStatus.COMPLETED).exists(), 30,
        what="the resumed worker to complete a new job",
    )
    assert zombie.alive()
    first.refresh_from_db()
    assert first.status == JobStatus.COMPLETED and first.attempt == 2
    assert seals_per_job(workers.events()) == {first.pk: 1, second.pk: 1}


@pytest.mark.process
def test_a_cpu_bound_stage_keeps_its_lease(workers, tmp_path):
    lease = 2.0
    job, _ = DatabaseControlPlane().enqueue(str(make_source(tmp_path / "src")))
    # The stage burns the CPU for three leases; a second worker sweeps ten times a second meanwhile.
    slow = workers.start("--burst", "--poll-interval", "0", "--lease-seconds", str(lease), env=RESCUER_ENV, stage=f"cpu:{3 * lease}")
    wait_until(lambda: AnalysisJob.objects.filter(slow.owns(), pk=job.pk, stage="test-cpu").exists(), 30, what="the slow stage")
    sweeper = workers.start("--poll-interval", "0.05", "--lease-seconds", str(lease), env=RESCUER_ENV)
    assert slow.wait(timeout=60) == 0, slow.log()[-3000:]
    assert sweeper.terminate() == 0

    job.refresh_from_db()
    assert job.status == JobStatus.COMPLETED
    assert job.attempt == 1
    assert f":{slow.pid}:" in job.worker_id
    assert [e for e in workers.events() if e["state"] in ("reclaimed", "lease_lost", "abandoned")] == []
    assert "sweep worker=" not in sweeper.log()
