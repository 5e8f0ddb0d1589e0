"""Fixtures of the fault suite: a pool of real worker processes that never outlives its test."""

import pytest

from .harness import WorkerPool


@pytest.fixture
def workers(worker_env, manage_py, tmp_path):
    """Start ``runworker`` processes on this test's database; every one still running is killed at the end."""
    pool = WorkerPool(worker_env, manage_py, tmp_path / "logs")
    yield pool
    pool.close()
