"""Fixtures shared by every layer: a fake clock, a control plane on it, job factories, worker environments."""

import datetime as dt
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

from analysis_jobs.clock import FakeClock
from analysis_jobs.control_plane import DatabaseControlPlane
from analysis_jobs.models import AnalysisJob
from analysis_jobs.worker import AnalysisWorker

ROOT = Path(__file__).resolve().parent.parent


def pytest_configure(config):
    """Make ``var/``, where the SQLite test databases live, so a bare ``pytest`` in a fresh clone works."""
    (ROOT / "var").mkdir(exist_ok=True)


def pytest_collection_modifyitems(config, items):
    """Leave out the tests written for the other engine's pass (reported as deselected, never skipped)."""
    from django.conf import settings

    vendor = "postgresql" if "postgresql" in settings.DATABASES["default"]["ENGINE"] else "sqlite"
    unwanted = "sqlite_only" if vendor == "postgresql" else "postgres_only"
    kept, dropped = [], []
    for item in items:
        (dropped if item.get_closest_marker(unwanted) else kept).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


@pytest.fixture
def fake_clock():
    return FakeClock(dt.datetime(2026, 1, 1, 12, 0, tzinfo=dt.UTC))


@pytest.fixture
def control_plane(fake_clock):
    return DatabaseControlPlane(clock=fake_clock, lease_seconds=30)


@pytest.fixture
def make_worker(control_plane, fake_clock):
    """Build workers on the test's control plane and clock (heartbeat hourly unless told); closed when it ends.

    Closing stops each worker's heartbeat thread, so no test leaves threads behind for a later one that forks.
    """
    built = []

    def build(pipeline=None, **options):
        options = {"clock": fake_clock, "heartbeat_seconds": 3600, **options}
        worker = AnalysisWorker(options.pop("control_plane", control_plane), pipeline=pipeline, **options)
        built.append(worker)
        return worker

    yield build
    for worker in built:
        worker.close()


@pytest.fixture
def source_dir(tmp_path):
    """A small real directory to analyse."""
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "app.py").write_text("import os\n\n\ndef main():\n    return os.getcwd()\n")
    (root / "README.md").write_text("# repo\n")
    return root


def commit_all(root) -> str:
    """Make ``root`` a git repository with everything in it committed; return the commit id."""
    git = ["git", "-C", str(root), "-c", "user.name=test", "-c", "user.email=test@example.com"]
    env = {name: value for name, value in os.environ.items() if not name.startswith("GIT_")}
    if not (Path(root) / ".git").exists():
        subprocess.run([*git, "init", "-q"], check=True, env=env)
    subprocess.run([*git, "add", "-A"], check=True, env=env)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "fixture"], check=True, env=env)
    return subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True, env=env).stdout.strip()


@pytest.fixture
def make_job(fake_clock, source_dir):
    """Create a job row directly, with any field overridden; queued and eligible by default.

    Its default revision is a label (``r1``, ``r2``...) that keeps jobs of one source apart; the commit it
    stands for is the one ``source_dir`` is committed at (made a git repository on first use).
    """
    counter = iter(range(1, 1_000_000))
    commit = []

    def make(**overrides):
        now = fake_clock.now()
        fields = dict(source=str(source_dir), revision=f"r{next(counter)}", created_at=now, updated_at=now, max_attempts=3)
        fields.update(overrides)
        if fields["revision"] and "commit" not in overrides and fields["source"] == str(source_dir):
            if not commit:
                commit.append(commit_all(source_dir))
            fields["commit"] = commit[0]
        return AnalysisJob.objects.create(**fields)

    return make


@pytest.fixture
def worker_env(transactional_db):
    """Environment for a real ``manage.py`` subprocess that shares this test's database."""
    settings_dict = connection.settings_dict
    if connection.vendor == "sqlite":
        url = f"sqlite:///{settings_dict['NAME']}"
    else:
        password = f":{settings_dict['PASSWORD']}" if settings_dict.get("PASSWORD") else ""
        port = f":{settings_dict['PORT']}" if settings_dict.get("PORT") else ""
        url = f"postgres://{settings_dict['USER']}{password}@{settings_dict['HOST']}{port}/{settings_dict['NAME']}"
    env = dict(os.environ, DATABASE_URL=url, PYTHONPATH=str(ROOT), DJANGO_SETTINGS_MODULE="partha.settings")
    env.pop("ANALYSIS_FAULT_CHECKPOINT", None)
    return env


@pytest.fixture
def manage_py():
    """The argv prefix that runs a management command in a fresh process."""
    return [sys.executable, str(ROOT / "manage.py")]
