"""
The systems under test, each able to empty its queue, fill it with N no-op jobs, start a worker process and
count the jobs done: this project on PostgreSQL and SQLite, the plain-SQL floor (and its one-statement form),
django-tasks-db, procrastinate.
"""

import datetime as dt
import sqlite3
import subprocess
import sys

import psycopg

from .harness import base_env, manage, spawn

JOB_TABLE = "analysis_jobs_analysisjob"


def _psql(dsn: str):
    return psycopg.connect(dsn, autocommit=True)


def reset_partha_pg(conn) -> None:
    tables = [r[0] for r in conn.execute("SELECT tablename FROM pg_tables WHERE tablename LIKE 'analysis\\_jobs\\_%'")]
    conn.execute(f"TRUNCATE {', '.join(tables)} RESTART IDENTITY CASCADE")


def reset_partha_sqlite(path: str) -> None:
    with sqlite3.connect(path, timeout=30) as conn:
        conn.execute("PRAGMA foreign_keys = OFF")
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table' AND name LIKE 'analysis_jobs_%'")]
        for table in tables:
            conn.execute(f"DELETE FROM {table}")
        conn.execute("DELETE FROM sqlite_sequence WHERE name LIKE 'analysis_jobs_%'")


def enqueue_noop(count: int, using: str = "default", prefix: str = "/bench/noop") -> None:
    """Queue ``count`` jobs through the control plane's bulk enqueue (committed before any worker starts)."""
    from analysis_jobs.control_plane import DatabaseControlPlane

    DatabaseControlPlane(using=using).enqueue_many([f"{prefix}/{i}" for i in range(count)])


class ParthaPostgres:
    name = "partha (PostgreSQL)"
    key = "partha-pg"

    def __init__(self, url: str, dsn: str):
        self.url, self.dsn = url, dsn
        self.conn = _psql(dsn)
        self.extra_args: list[str] = []

    def reset(self):
        reset_partha_pg(self.conn)

    def enqueue(self, count):
        enqueue_noop(count, "default")

    def start(self, index, *args):
        env = base_env(DATABASE_URL=self.url, ANALYSIS_PIPELINE="bench.noop.pipeline")
        return spawn(manage("runworker", *self.extra_args, *args), env, f"{self.key}-{index}")

    def done(self) -> int:
        return self.conn.execute(f"SELECT count(*) FROM {JOB_TABLE} WHERE status = 'completed'").fetchone()[0]


class ParthaSqlite(ParthaPostgres):
    name = "partha (SQLite)"
    key = "partha-sqlite"

    def __init__(self, url: str, path: str):
        self.url, self.path = url, path
        self.conn = sqlite3.connect(path, timeout=30, isolation_level=None)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.extra_args = []

    def reset(self):
        reset_partha_sqlite(self.path)

    def enqueue(self, count):
        enqueue_noop(count, "sqlite")

    def done(self) -> int:
        return self.conn.execute(f"SELECT count(*) FROM {JOB_TABLE} WHERE status = 'completed'").fetchone()[0]


class Floor(ParthaPostgres):
    name = "floor (plain SQL, PostgreSQL)"
    key = "floor"
    floor_args: tuple[str, ...] = ()

    def enqueue(self, count):
        from analysis_jobs.models import AnalysisSnapshot, SnapshotState

        enqueue_noop(count, "default")
        now = dt.datetime.now(dt.UTC)
        self.snapshot_id = AnalysisSnapshot.objects.create(
            state=SnapshotState.SEALED, content_hash="0" * 64, created_at=now, sealed_at=now
        ).pk

    def start(self, index, *args):
        return spawn([sys.executable, "-m", "bench.floor", self.dsn, str(self.snapshot_id), *self.floor_args], base_env(), f"{self.key}-{index}")


class ChainedFloor(Floor):
    name = "floor, one statement per job"
    key = "floor-chained"
    floor_args = ("--chained",)


class DjangoTasksDb:
    name = "django-tasks-db (db_worker)"
    key = "dtdb"
    table = "django_tasks_database_dbtaskresult"

    def __init__(self, url: str, dsn: str):
        self.url, self.dsn = url, dsn
        self.env = base_env(DATABASE_URL=url, DJANGO_SETTINGS_MODULE="bench.peers.dtdb_settings")
        subprocess.run([sys.executable, "-m", "django", "migrate", "-v0"], env=self.env, check=True, cwd=str(_root()))
        self.conn = _psql(dsn)

    def reset(self):
        self.conn.execute(f"TRUNCATE {self.table}")

    def enqueue(self, count):
        subprocess.run([sys.executable, "-m", "bench.peers.dtdb_enqueue", str(count)], env=self.env, check=True, cwd=str(_root()))

    def start(self, index, *args):
        return spawn([sys.executable, "-m", "django", "db_worker"], self.env, f"{self.key}-{index}")

    def done(self) -> int:
        return self.conn.execute(f"SELECT count(*) FROM {self.table} WHERE status = 'SUCCESSFUL'").fetchone()[0]


class Procrastinate:
    name = "procrastinate (worker)"
    key = "procrastinate"
    app = "bench.peers.procrastinate_app.app"

    def __init__(self, dsn: str):
        self.dsn = dsn
        self.env = base_env(PROCRASTINATE_DSN=dsn)
        subprocess.run(
            [sys.executable, "-m", "procrastinate", f"--app={self.app}", "schema", "--apply"],
            env=self.env, check=True, cwd=str(_root()), stdout=subprocess.DEVNULL,
        )
        self.conn = _psql(dsn)

    def reset(self):
        self.conn.execute("TRUNCATE procrastinate_jobs RESTART IDENTITY CASCADE")

    def enqueue(self, count):
        subprocess.run([sys.executable, "-m", "bench.peers.procrastinate_enqueue", str(count)], env=self.env, check=True, cwd=str(_root()))

    def start(self, index, *args):
        return spawn([sys.executable, "-m", "procrastinate", f"--app={self.app}", "worker"], self.env, f"{self.key}-{index}")

    def done(self) -> int:
        return self.conn.execute("SELECT count(*) FROM procrastinate_jobs WHERE status = 'succeeded'").fetchone()[0]


def _root():
    from .harness import ROOT

    return ROOT
