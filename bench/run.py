"""
The benchmark suite: ``scripts/bench`` (or ``python -m bench.run``) runs every workload on a throwaway PostgreSQL
server and a SQLite file, prints a table and writes BENCHMARKS.md.

Every figure is the median of ``--repeats`` runs, and every comparison is a ratio of figures measured in the same
run, because shared machines are noisy. Drain throughput is the steady rate: jobs done between 20% and 90% of the
queue divided by the time between them, so process start-up and the last worker's tail are left out for every
system alike. Workers are started after their jobs are committed.
"""

import argparse
import datetime as dt
import json
import logging
import os
import platform
import sys
import time
from pathlib import Path

from .harness import OUT, ROOT

sys.path.insert(0, str(ROOT))


def _setup(args):
    """Start the PostgreSQL server, create the databases, point Django at them and migrate."""
    from tests.pgserver import Cluster

    cluster = Cluster().start()
    base = cluster.url.rsplit("/", 1)[0]
    OUT.mkdir(parents=True, exist_ok=True)
    sqlite_path = OUT / "bench.sqlite3"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{sqlite_path}{suffix}").unlink(missing_ok=True)
    env = dict(
        DATABASE_URL=cluster.url,
        BENCH_SQLITE_URL=f"sqlite:///{sqlite_path}",
        DJANGO_SETTINGS_MODULE="bench.settings",
        ANALYSIS_LOG_LEVEL=os.environ.get("ANALYSIS_LOG_LEVEL", "INFO"),
    )
    os.environ.update(env)
    import django
    import psycopg

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    call_command("migrate", database="sqlite", verbosity=0)
    with psycopg.connect(f"{base}/postgres".replace("postgres://", "postgresql://"), autocommit=True) as admin:
        for name in ("dtdb", "procrastinate"):
            admin.execute(f"CREATE DATABASE {name}")
    # The bench process logs what it enqueues to a file, not the terminal.
    handler = logging.FileHandler(OUT / "bench-process.log")
    for logger_name in ("analysis_jobs",):
        logger = logging.getLogger(logger_name)
        logger.handlers = [handler]
        logger.propagate = False
    return cluster, base, sqlite_path


def machine_facts(cluster_dsn: str) -> dict:
    import sqlite3
    from importlib.metadata import version

    import psycopg

    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gib = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem_gib = round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    with psycopg.connect(cluster_dsn) as conn:
        server = conn.execute("SHOW server_version").fetchone()[0]
    commit = os.popen(f"git -C {ROOT} rev-parse --short HEAD 2>/dev/null").read().strip()
    return {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": commit or "unknown",
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gib": mem_gib,
        "os": platform.platform(),
        "python": platform.python_version(),
        "postgresql": server,
        "sqlite": sqlite3.sqlite_version,
        "packages": {name: version(name) for name in ("Django", "psycopg", "django-tasks", "django-tasks-db", "procrastinate")},
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=1000, help="No-op jobs per drain run (default 1,000).")
    parser.add_argument("--repeats", type=int, default=3, help="Runs per figure; the median is reported (default 3).")
    parser.add_argument("--only", default="", help="Comma-separated workloads to run (default: all).")
    parser.add_argument("--big", type=int, default=1_000_000, help="Finished jobs in the big table (default 1,000,000).")
    parser.add_argument("--scale", action="store_true", help="Also analyse the 100,000-file monorepo (several minutes).")
    parser.add_argument("--output", help="Where to write the report (default: BENCHMARKS.md, for a run of every workload).")
    args = parser.parse_args(argv)
    started = time.monotonic()
    cluster, base, sqlite_path = _setup(args)
    try:
        from . import report, workloads

        ctx = workloads.Context(args=args, cluster=cluster, base=base, sqlite_path=sqlite_path)
        results = {"machine": machine_facts(cluster.url.replace("postgres://", "postgresql://"))}
        only = args.only.split(",") if args.only else []
        chosen = [w for w in workloads.ORDER if not only or w in only]
        chosen += [w for w in workloads.OPT_IN if w in only or args.scale]
        for name in chosen:
            t0 = time.monotonic()
            print(f"== {name}", flush=True)
            results[name] = getattr(workloads, name)(ctx)
            print(f"   {time.monotonic() - t0:.0f} s", flush=True)
        results["elapsed_seconds"] = round(time.monotonic() - started)
        (OUT / "results.json").write_text(json.dumps(results, indent=2, default=str))
        text = report.render(results, args)
        print(text)
        output = args.output or ("" if args.only else str(ROOT / "BENCHMARKS.md"))
        if output:
            Path(output).write_text(text)
            print(f"wrote {output}")
    finally:
        cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
