"""
A database restart mid-run: the PostgreSQL server is stopped and started under busy workers. The workers ride it
out (the loop and the heartbeat treat a lost connection as "database away", reconnect and go on), every job
completes exactly once and nothing is lost.
"""

import os

import pytest
from django.db import connections

from analysis_jobs.control_plane import DatabaseControlPlane
from analysis_jobs.models import AnalysisJob, JobStatus
from tests import pgserver

from .harness import assert_clean_audit, distinct_sources, queue_audit, seals_per_job, wait_until

JOBS = 60


def _count(**filters):
    try:
        return AnalysisJob.objects.filter(**filters).count()
    except Exception:
        connections.close_all()  # this test's own connection died with the server: reconnect on the next poll
        return None


@pytest.mark.process
@pytest.mark.postgres_only
def test_workers_survive_a_database_restart(workers, tmp_path):
    if "PARTHA_TEST_PGDATA" not in os.environ:
        pytest.skip("PARTHA_TEST_POSTGRES_URL names an external server; this test restarts only the suite's own cluster")
    control_plane = DatabaseControlPlane()
    ids = [control_plane.enqueue(s, max_attempts=5)[0].pk for s in distinct_sources(tmp_path, JOBS, files=10, size=1 << 20)]
    env = {"ANALYSIS_SWEEP_INTERVAL": "0.5", "ANALYSIS_RETRY_BASE_SECONDS": "0"}
    pool = [workers.start("--poll-interval", "0.1", "--lease-seconds", "2", env=env) for _ in range(3)]

    for worker in pool:
        worker.wait_started()  # a worker still starting would fail its start-up check, which is another test
    wait_until(lambda: (_count(status=JobStatus.COMPLETED) or 0) >= 5, 60, what="the workers to be under way")
    assert _count(status=JobStatus.QUEUED), "the queue drained before the restart; nothing was tested"
    connections.close_all()
    pgserver.restart_from_environment("restart")
    connections.close_all()

    wait_until(lambda: _count(status=JobStatus.COMPLETED) == JOBS, 120, interval=0.2, what="every job to complete")
    assert all(worker.alive() for worker in pool), "a worker died with the database:\n" + "\n".join(w.log()[-4000:] for w in pool if not w.alive())
    for worker in pool:
        assert worker.terminate() == 0, worker.log()[-3000:]
    assert_clean_audit(queue_audit())
    assert seals_per_job(workers.events()) == {pk: 1 for pk in ids}
    assert "event=database_unavailable" in workers.logs() or "state=database_unavailable" in workers.logs()
