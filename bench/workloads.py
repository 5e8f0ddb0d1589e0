"""The workloads, each a function of the shared ``Context`` returning the figures it measured (medians)."""

import ast
import datetime as dt
import hashlib
import io
import itertools
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from .harness import OUT, ROOT, TreeMemory, base_env, manage, median, percentile, spawn, watch
from .systems import JOB_TABLE, ChainedFloor, DjangoTasksDb, Floor, ParthaPostgres, ParthaSqlite, Procrastinate, reset_partha_pg

ORDER = ["drain", "latency", "idle", "enqueue", "flat", "admin", "analysis", "scale"]
OPT_IN = ["scale_large"]  # minutes each: run only when named in --only, or with --scale
WORKERS = (1, 2, 4)


@dataclass
class Context:
    args: object
    cluster: object
    base: str
    sqlite_path: Path
    cache: dict = field(default_factory=dict)

    def dsn(self, database: str = "partha") -> str:
        return f"{self.base}/{database}".replace("postgres://", "postgresql://")

    def url(self, database: str = "partha") -> str:
        return f"{self.base}/{database}"

    @property
    def sqlite_url(self) -> str:
        return f"sqlite:///{self.sqlite_path}"


def _run_drain(system, workers: int, jobs: int, *, extra=(), timeout=240.0):
    system.reset()
    system.enqueue(jobs)
    procs = [system.start(i, *extra) for i in range(workers)]
    try:
        progress = watch(system.done, jobs, timeout=timeout, alive=lambda: any(p.popen.poll() is None for p in procs))
    finally:
        for p in procs:
            p.stop()
    logs = "".join(p.text() for p in procs)
    claimed = len(re.findall(r"state=claimed", logs))
    lost = len(re.findall(r"event=claim_lost", logs))
    return {
        "rate": progress.steady_rate(jobs),
        "cpu_busy": progress.steady_cpu_busy(jobs),
        "wall": progress.finished_after,
        "claimed": claimed,
        "lost": lost,
    }


def drain(ctx):
    """N no-op jobs drained by W = 1, 2, 4 worker processes, for every system; the runs of a W interleave."""
    jobs = ctx.args.jobs
    systems = [
        ParthaPostgres(ctx.url(), ctx.dsn()),
        ParthaSqlite(ctx.sqlite_url, str(ctx.sqlite_path)),
        Floor(ctx.url(), ctx.dsn()),
        ChainedFloor(ctx.url(), ctx.dsn()),
        DjangoTasksDb(ctx.url("dtdb"), ctx.dsn("dtdb")),
        Procrastinate(ctx.dsn("procrastinate")),
    ]
    runs = {(s.key, w): [] for s in systems for w in WORKERS}
    for repeat in range(ctx.args.repeats):
        for w in WORKERS:
            for system in systems:
                result = _run_drain(system, w, jobs)
                runs[(system.key, w)].append(result)
                print(f"   {system.key:14} W={w} run {repeat + 1}: {result['rate'] or 0:8.0f} jobs/s", flush=True)
    table = {}
    for system in systems:
        for w in WORKERS:
            rs = runs[(system.key, w)]
            claimed = sum(r["claimed"] for r in rs)
            lost = sum(r["lost"] for r in rs)
            table[f"{system.key}/{w}"] = {
                "system": system.name,
                "key": system.key,
                "workers": w,
                "rate": median([r["rate"] for r in rs]),
                "rates": [round(r["rate"] or 0) for r in rs],
                "cpu_busy": median([r["cpu_busy"] for r in rs]),
                "wall": median([r["wall"] for r in rs]),
                "lost": lost,
                "claimed": claimed,
                "lost_share": (lost / (lost + claimed)) if (lost + claimed) else None,
            }
    # Ratios within each repeat, then their median: the comparison is made inside one run.
    ratios = {}
    for w in WORKERS:
        for other in ("floor", "dtdb", "procrastinate", "partha-sqlite"):
            pairs = zip(runs[("partha-pg", w)], runs[(other, w)])
            ratios[f"partha-pg/{other}/{w}"] = median([a["rate"] / b["rate"] for a, b in pairs if a["rate"] and b["rate"]])
    return {"jobs": jobs, "table": table, "ratios": ratios}


# -- start latency ---------------------------------------------------------------------------------------------


def _wait_listening(conn, timeout=60.0):
    """Wait until some session of this database has run LISTEN (the idle worker's wake-up connection)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN%%'"
        ).fetchone()
        if row[0]:
            return
        time.sleep(0.02)
    raise TimeoutError("the worker never started listening")


def _wait_started(proc, timeout=60.0):
    deadline = time.monotonic() + timeout
    while "event=started" not in proc.text():
        if time.monotonic() > deadline or proc.popen.poll() is not None:
            raise TimeoutError(f"worker did not start: {proc.text()[-2000:]}")
        time.sleep(0.02)


def _latency_batch(using, count, rate):
    """Enqueue ``count`` jobs one at a time at ``rate`` per second; return enqueue-to-claim seconds of each."""
    from analysis_jobs.control_plane import DatabaseControlPlane
    from analysis_jobs.models import AnalysisJob, JobStatus

    cp = DatabaseControlPlane(using=using)
    ids = []
    start = time.monotonic()
    for i in range(count):
        target = start + i / rate
        delay = target - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        job, _ = cp.enqueue(f"/bench/latency/{time.time_ns()}-{i}")
        ids.append(job.pk)
    deadline = time.monotonic() + 60
    jobs = AnalysisJob.objects.using(using).filter(pk__in=ids)
    while jobs.exclude(status=JobStatus.COMPLETED).exists():
        if time.monotonic() > deadline:
            raise TimeoutError("latency jobs did not finish")
        time.sleep(0.05)
    return [(s - c).total_seconds() for c, s in jobs.values_list("created_at", "started_at")]


def latency(ctx):
    """One idle worker; jobs enqueued one at a time at 20/s; enqueue (created_at) to claim (started_at)."""
    count, rate = 40, 20.0
    out = {}
    for key, system, using, poll in (
        ("postgresql", ParthaPostgres(ctx.url(), ctx.dsn()), "default", 5.0),
        ("sqlite", ParthaSqlite(ctx.sqlite_url, str(ctx.sqlite_path)), "sqlite", None),
    ):
        system.reset()
        args = ("--poll-interval", str(poll)) if poll else ()
        proc = system.start(0, *args)
        try:
            _wait_started(proc)
            if using == "default":
                _wait_listening(system.conn)
            time.sleep(0.5)
            batches = [_latency_batch(using, count, rate) for _ in range(ctx.args.repeats)]
        finally:
            proc.stop()
        from django.conf import settings

        out[key] = {
            "poll_interval": poll or settings.ANALYSIS_JOBS["POLL_INTERVAL"],
            "jobs_per_batch": count,
            "p50_ms": median([percentile(b, 0.5) * 1000 for b in batches]),
            "p95_ms": median([percentile(b, 0.95) * 1000 for b in batches]),
            "max_ms": median([max(b) * 1000 for b in batches]),
        }
        print(f"   {key}: p50 {out[key]['p50_ms']:.1f} ms  p95 {out[key]['p95_ms']:.1f} ms", flush=True)
    return out


# -- idle cost -------------------------------------------------------------------------------------------------


LOGGED_STATEMENT = re.compile(r"LOG:\s+(?:statement|execute [^:]+):")


def idle(ctx):
    """Statements the server runs for one idle worker (PostgreSQL, notifications on), per poll interval."""
    poll, window = 1.0, 10.0
    admin = psycopg.connect(ctx.dsn("postgres"), autocommit=True)
    admin.execute("DROP DATABASE IF EXISTS idle WITH (FORCE)")
    # A copy of the migrated schema; only this database logs its statements.
    admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = 'partha' AND pid <> pg_backend_pid()")
    admin.execute("CREATE DATABASE idle TEMPLATE partha")
    admin.execute("ALTER DATABASE idle SET log_statement = 'all'")
    admin.execute("ALTER SYSTEM SET log_line_prefix = '%m [%p] db=%d '")
    admin.execute("SELECT pg_reload_conf()")
    from django.db import connections

    connections.close_all()  # the bench's own connection to partha was ended above
    system = ParthaPostgres(ctx.url("idle"), ctx.dsn("idle"))
    from django.conf import settings

    sweep = settings.ANALYSIS_JOBS["SWEEP_INTERVAL"]
    proc = system.start(0, "--poll-interval", str(poll))
    marker = psycopg.connect(ctx.dsn("idle"), autocommit=True)
    try:
        _wait_started(proc)
        _wait_listening(system.conn)
        time.sleep(1.5)
        marker.execute("SELECT 'bench-idle-start'")
        time.sleep(window)
        marker.execute("SELECT 'bench-idle-end'")
        time.sleep(0.5)
    finally:
        proc.stop()
        marker.close()
    log = Path(ctx.cluster.log).read_text(errors="replace")
    section = log.split("bench-idle-start", 1)[1].split("bench-idle-end", 1)[0]
    section = section.split("\n", 1)[1].rsplit("\n", 1)[0]  # whole lines only, the markers' own left out
    # One entry per logged line that starts with the prefix's timestamp; a statement's further lines follow it.
    entries = re.split(r"\n(?=\d{4}-\d\d-\d\d )", section)
    # A simple query logs as "statement: ..."; one over the extended protocol (the prepared hot path) as
    # "execute <name>: ...", once per execution.
    statements = [entry for entry in entries if "db=idle" in entry and LOGGED_STATEMENT.search(entry)]
    claims = [s for s in statements if "WITH candidate" in s]
    sweeps = [s for s in statements if "'running'" in s and "lease_expires_at" in s and "candidate" not in s]
    statements = [s for s in statements if "bench-idle" not in s]
    others = [" ".join(LOGGED_STATEMENT.split(s, 1)[-1].split())[:80] for s in statements if s not in claims and s not in sweeps]
    admin.execute("ALTER SYSTEM RESET log_line_prefix")
    admin.execute("SELECT pg_reload_conf()")
    admin.close()
    intervals = window / poll
    out = {
        "poll_interval": poll,
        "sweep_interval": sweep,
        "window_seconds": window,
        "statements": len(statements),
        "per_poll_interval": len(statements) / intervals,
        "claim_polls_per_interval": len(claims) / intervals,
        "sweeps": len(sweeps),
        "other": others[:5],
    }
    print(f"   {out['per_poll_interval']:.2f} statements per poll interval ({len(claims)} polls, {len(sweeps)} sweeps)", flush=True)
    return out


# -- enqueue ---------------------------------------------------------------------------------------------------


def enqueue(ctx):
    """``enqueue_analysis --from-file`` with 10,000 existing directories, in the bench process and as a command."""
    from django.core.management import call_command

    count = 10_000
    root = OUT / "enqueue-sources"
    if not root.exists():
        root.mkdir(parents=True)
        for i in range(count):
            (root / f"s{i:05d}").mkdir()
    listing = OUT / "enqueue-sources.txt"
    listing.write_text("".join(f"{root / f's{i:05d}'}\n" for i in range(count)))
    out = {"sources": count}
    for key, using, reset in (
        ("postgresql", "default", lambda: reset_partha_pg(psycopg.connect(ctx.dsn(), autocommit=True))),
        ("sqlite", "sqlite", lambda: __import__("bench.systems", fromlist=["x"]).reset_partha_sqlite(str(ctx.sqlite_path))),
    ):
        inproc, command = [], []
        for _ in range(ctx.args.repeats):
            reset()
            if using == "default":
                t0 = time.monotonic()
                call_command("enqueue_analysis", "--from-file", str(listing), stdout=io.StringIO(), stderr=io.StringIO())
                inproc.append(count / (time.monotonic() - t0))
                reset()
            url = ctx.url() if using == "default" else ctx.sqlite_url
            t0 = time.monotonic()
            subprocess.run(
                manage("enqueue_analysis", "--from-file", str(listing)), env=base_env(DATABASE_URL=url), check=True,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT,
            )
            command.append(count / (time.monotonic() - t0))
        out[key] = {"in_process_per_s": median(inproc), "command_per_s": median(command)}
        inside = f"{out[key]['in_process_per_s']:.0f} jobs/s in process, " if inproc else ""
        print(f"   {key}: {inside}{out[key]['command_per_s']:.0f} jobs/s as a command (with start-up)", flush=True)
    return out


# -- flat claim cost -------------------------------------------------------------------------------------------


def _insert_rows(conn, count, status, snapshot_id):
    """Insert ``count`` job rows with one INSERT ... SELECT, every column from the model's own defaults."""
    from analysis_jobs.models import AnalysisJob

    columns, values, params = [], [], []
    now = dt.datetime.now(dt.UTC)
    finished = status == "completed"
    for f in AnalysisJob._meta.concrete_fields:
        if f.primary_key:
            continue
        columns.append(f.column)
        if f.name == "source":
            values.append(f"'/bench/{status}/' || g")
        elif f.name == "status":
            values.append("%s"); params.append(status)
        elif f.name == "created_at":
            values.append("%s::timestamptz - (%s - g) * interval '1 millisecond'"); params += [now - dt.timedelta(hours=1), count]
        elif f.name in ("updated_at", "started_at", "completed_at") and (finished or f.name == "updated_at"):
            values.append("%s::timestamptz"); params.append(now)
        elif f.name == "snapshot" and finished:
            values.append("%s::bigint"); params.append(snapshot_id)
        elif f.name == "stage" and finished:
            values.append("'done'")
        elif f.name == "progress" and finished:
            values.append("100")
        elif f.name == "attempt" and finished:
            values.append("1")
        else:
            default = f.get_default()
            values.append("%s" + ("::timestamptz" if default is None and f.get_internal_type() == "DateTimeField" else ""))
            params.append(default)
    conn.execute(
        f"INSERT INTO {JOB_TABLE} ({', '.join(columns)}) SELECT {', '.join(values)} FROM generate_series(1, %s) g",
        (*params, count),
    )


def _sealed_snapshot():
    from analysis_jobs.models import AnalysisSnapshot, SnapshotState

    now = dt.datetime.now(dt.UTC)
    return AnalysisSnapshot.objects.create(state=SnapshotState.SEALED, content_hash="0" * 64, created_at=now, sealed_at=now).pk


def _flat_run(system, conn, per_worker):
    queued = lambda: conn.execute(f"SELECT count(*) FROM {JOB_TABLE} WHERE status = 'queued'").fetchone()[0]  # noqa: E731
    before = queued()
    total = per_worker * 2
    procs = [system.start(i, "--max-jobs", str(per_worker)) for i in range(2)]
    try:
        progress = watch(lambda: before - queued(), total, timeout=240, interval=0.01)
    finally:
        for p in procs:
            p.stop(timeout=30)
    return progress.steady_rate(total)


def _explain(conn, sql, running=1_000):
    """EXPLAIN ANALYZE ``sql`` while ``running`` queued jobs are running under live leases, as under busy workers.

    With no running job at all, any index on ``status`` finds none as fast as the expired-lease index does and the
    planner's pick says nothing. The jobs are set running, and the statistics taken, in a transaction that is
    rolled back.
    """
    conn.execute("BEGIN")
    try:
        conn.execute(
            f"UPDATE {JOB_TABLE} SET status = 'running', worker_id = 'bench-busy', attempt = 1,"
            " lease_expires_at = now() + interval '30 seconds' WHERE id IN"
            f" (SELECT id FROM {JOB_TABLE} WHERE status = 'queued' ORDER BY id LIMIT %s)",
            (running,),
        )
        conn.execute(f"ANALYZE {JOB_TABLE}")
        return "\n".join(r[0] for r in conn.execute(f"EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) {sql}"))
    finally:
        conn.execute("ROLLBACK")


def _claim_and_sweep_sql(dsn: str):
    """Return the claim statement and the sweep's scan as they run now, with their parameters inlined."""
    from django.db import connection, transaction
    from django.test.utils import CaptureQueriesContext

    from analysis_jobs import statements
    from analysis_jobs.control_plane import DatabaseControlPlane

    cp = DatabaseControlPlane()
    now = cp.clock.now()
    params = {"now": now, "expires": now + dt.timedelta(seconds=cp.lease_seconds), "worker_id": "bench-explain"}
    with psycopg.connect(dsn) as conn:
        claim = psycopg.ClientCursor(conn).mogrify(statements.CLAIM_NEXT, params)
    with CaptureQueriesContext(connection) as captured, transaction.atomic():
        cp.expired_leases(now)
        transaction.set_rollback(True)
    sweep = next(q["sql"] for q in captured.captured_queries if "'running'" in q["sql"] and "lease_expires_at" in q["sql"])
    return claim, sweep


def flat(ctx):
    """W=2 throughput with 10,000 queued, on a fresh table and with 1,000,000 finished jobs beside them."""
    conn = psycopg.connect(ctx.dsn(), autocommit=True)
    system = ParthaPostgres(ctx.url(), ctx.dsn())
    per_worker = max(100, ctx.args.jobs // 2)
    queue = 10_000
    fresh, big = [], []
    for _ in range(ctx.args.repeats):
        reset_partha_pg(conn)
        _insert_rows(conn, queue, "queued", None)
        conn.execute(f"VACUUM ANALYZE {JOB_TABLE}")
        fresh.append(_flat_run(system, conn, per_worker))
        print(f"   fresh: {fresh[-1] or 0:.0f} jobs/s", flush=True)
    reset_partha_pg(conn)
    snapshot = _sealed_snapshot()
    t0 = time.monotonic()
    _insert_rows(conn, ctx.args.big, "completed", snapshot)
    conn.execute(f"VACUUM ANALYZE {JOB_TABLE}")
    filled_in = time.monotonic() - t0
    last_finished = conn.execute(f"SELECT max(id) FROM {JOB_TABLE}").fetchone()[0]
    for _ in range(ctx.args.repeats):
        conn.execute(f"DELETE FROM {JOB_TABLE} WHERE id > %s", (last_finished,))
        _insert_rows(conn, queue, "queued", None)
        conn.execute(f"ANALYZE {JOB_TABLE}")
        big.append(_flat_run(system, conn, per_worker))
        print(f"   {ctx.args.big:,} finished: {big[-1] or 0:.0f} jobs/s", flush=True)
    claim_sql, sweep_sql = _claim_and_sweep_sql(ctx.dsn())
    rows = conn.execute(f"SELECT count(*) FROM {JOB_TABLE}").fetchone()[0]
    ctx.cache["big_table_ready"] = True
    return {
        "queued": queue,
        "finished": ctx.args.big,
        "rows": rows,
        "jobs_per_run": per_worker * 2,
        "fresh_rate": median(fresh),
        "big_rate": median(big),
        "ratio": median([b / f for f, b in zip(fresh, big) if f and b]),
        "fill_seconds": round(filled_in, 1),
        "explain_claim": _explain(conn, claim_sql),
        "explain_sweep": _explain(conn, sweep_sql),
    }


# -- admin -----------------------------------------------------------------------------------------------------


ADMIN_PAGES = {
    "list": "",
    "status=queued": "?status__exact=queued",
    "status=completed": "?status__exact=completed",
    "error_code filter": "?error_code=RI-JOB-STALE",
    "search": "?q=%2Fbench%2Fqueued%2F17",
    "queue overview": "overview/",
    "overview JSON (its live poll)": "overview.json",
}


def admin(ctx):
    """The job changelist and the queue overview over the big table (1,000,000 finished + queued), rendered by
    Django's test client."""
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext, setup_test_environment

    if not ctx.cache.get("big_table_ready"):
        conn = psycopg.connect(ctx.dsn(), autocommit=True)
        reset_partha_pg(conn)
        _insert_rows(conn, ctx.args.big, "completed", _sealed_snapshot())
        _insert_rows(conn, 10_000, "queued", None)
        conn.execute(f"VACUUM ANALYZE {JOB_TABLE}")
    setup_test_environment()
    User = get_user_model()
    user = User.objects.filter(username="bench").first() or User.objects.create_superuser("bench", "bench@example.com", "bench")
    client = Client()
    client.force_login(user)
    rows = psycopg.connect(ctx.dsn(), autocommit=True).execute(f"SELECT count(*) FROM {JOB_TABLE}").fetchone()[0]
    out = {"rows": rows, "pages": {}}
    for name, query in ADMIN_PAGES.items():
        url = f"/admin/analysis_jobs/analysisjob/{query}"
        client.get(url)  # warm the caches once
        times = []
        for _ in range(max(3, ctx.args.repeats)):
            with CaptureQueriesContext(connection) as captured:
                t0 = time.monotonic()
                response = client.get(url)
                times.append((time.monotonic() - t0) * 1000)
            assert response.status_code == 200, response.status_code
        slowest = max(captured.captured_queries, key=lambda q: float(q["time"]))
        out["pages"][name] = {
            "ms": median(times),
            "queries": len(captured.captured_queries),
            "slowest_query_ms": round(float(slowest["time"]) * 1000, 1),
            "slowest_query": slowest["sql"][:160],
        }
        print(f"   {name}: {out['pages'][name]['ms']:.0f} ms ({len(captured.captured_queries)} queries, slowest {out['pages'][name]['slowest_query_ms']} ms)", flush=True)
    return out


# -- analysis of Django's source -------------------------------------------------------------------------------


def _timed_floor(root: Path, parse) -> float:
    """Read every file under ``root`` in path order, SHA-256 it and hand it to ``parse(name, data)``, in this
    process; return seconds.

    The cycle collector is paused, as the worker pauses it for an attempt: ``ast``'s trees are Python objects,
    and on the 25,000-file tree the collector took 3.0 s of a 15.2 s floor, which flattered every ratio to it.
    """
    from analysis_jobs.worker import _cycle_collector_paused

    with _cycle_collector_paused():
        t0 = time.monotonic()
        for directory, dirnames, filenames in os.walk(root):
            dirnames.sort()
            for name in sorted(filenames):
                with open(os.path.join(directory, name), "rb") as handle:
                    data = handle.read()
                hashlib.sha256(data).hexdigest()
                parse(name, data)
        return time.monotonic() - t0


def _ast_parse(name: str, data: bytes) -> None:
    if name.endswith(".py"):
        try:
            ast.parse(data)
        except (SyntaxError, ValueError):
            pass


def _floor_analysis(root: Path) -> float:
    """Read every file, SHA-256 it and ``ast.parse`` the Python ones, in this process; return seconds."""
    return _timed_floor(root, _ast_parse)


FLOOR_GRAMMARS = ("python", "javascript", "typescript", "tsx", "terraform", "dockerfile")


def floor_grammar(name: str) -> str | None:
    """Return the grammar the every-grammar floor parses the file ``name`` with (as the pipeline does), or None."""
    from analysis_jobs.pipeline.repository import language_of

    language = "tsx" if name.endswith(".tsx") else language_of(name)
    return language if language in FLOOR_GRAMMARS else None


def _grammar_floor(root: Path) -> float:
    """Read every file, SHA-256 it and parse each source file with the tree-sitter grammar the pipeline reads it
    with (``floor_grammar``), in this process; return seconds.

    The parse the pipeline cannot skip, where ``_floor_analysis`` parses the Python files only (with ``ast``).
    """
    from analysis_jobs.pipeline.extractors import iac, javascript, python

    parsers = {"python": python.parser(), "javascript": javascript.parser("javascript"),
               "typescript": javascript.parser("typescript"), "tsx": javascript.parser("tsx"),
               "terraform": iac.grammar_parser("hcl"), "dockerfile": iac.grammar_parser("dockerfile")}

    def parse(name: str, data: bytes) -> None:
        if grammar := floor_grammar(name):
            parsers[grammar].parse(data)

    return _timed_floor(root, parse)


_ANALYSIS_LOGS = itertools.count(1)


@dataclass(frozen=True)
class Analysed:
    """One analysis by one worker process: the job's own time, and what the worker's process tree used."""

    seconds: float | None  # from the job's started_at to its completed_at
    peak_mib: float  # the worker and its parsing processes together
    cpu_seconds: float  # user and system time of the worker and its parsing processes, start-up included
    status: str
    proc: object


def _analyse_once(ctx, source: Path, commit: str = "", processes: int = 1) -> Analysed:
    """Queue one analysis of ``source`` (at ``commit``) and run one ``runworker`` for it, parsing over ``processes``."""
    from analysis_jobs.control_plane import DatabaseControlPlane
    from analysis_jobs.models import AnalysisJob

    job, _ = DatabaseControlPlane().enqueue(str(source), revision=commit, commit=commit)
    # One log per worker (job ids start again after each reset): the log of an earlier job is what tells why it
    # ran as it did.
    proc = spawn(manage("runworker", "--burst", "--max-jobs", "1"),
                 base_env(DATABASE_URL=ctx.url(), ANALYSIS_EXTRACT_PROCESSES=processes), f"analysis-{next(_ANALYSIS_LOGS)}")
    tree = TreeMemory(proc.popen.pid) if processes > 1 else None
    _, status, usage = os.wait4(proc.popen.pid, 0)  # its usage counts the parsing processes it waited for too
    peak = max(usage.ru_maxrss * 1024, tree.stop() if tree else 0)
    proc.popen.returncode = os.waitstatus_to_exitcode(status)
    job = AnalysisJob.objects.get(pk=job.pk)
    seconds = (job.completed_at - job.started_at).total_seconds() if job.completed_at and job.started_at else None
    return Analysed(seconds, peak / 2**20, usage.ru_utime + usage.ru_stime, job.status, proc)


def _two_revisions(source: Path, repository: Path, changed: Path) -> tuple[str, str]:
    """Commit a copy of ``source`` (packed, as a clone is), then a one-line change to ``changed``; return both commits."""
    if repository.exists():
        shutil.rmtree(repository)
    shutil.copytree(source, repository)
    env = dict(base_env(), GIT_AUTHOR_NAME="bench", GIT_AUTHOR_EMAIL="bench@localhost", GIT_COMMITTER_NAME="bench",
               GIT_COMMITTER_EMAIL="bench@localhost")

    def git(*args):
        return subprocess.run(["git", "-C", str(repository), *args], env=env, check=True, capture_output=True, text=True).stdout.strip()

    git("init", "-q")
    git("add", "-A")
    git("commit", "-q", "-m", "Django's source")
    git("gc", "-q")
    path = repository / changed
    path.write_text(path.read_text() + "\n\n# bench edit\n")
    git("commit", "-q", "-am", "One file changed")
    return git("rev-parse", "HEAD~1"), git("rev-parse", "HEAD")


def analysis(ctx):
    """A full analysis of Django's source tree against the read+hash+parse floor, a re-analysis, peak memory."""
    import django as django_package

    from analysis_jobs.pipeline import default_pipeline
    from analysis_jobs.pipeline.sources import DirectorySource

    source = OUT / "django-source"
    if source.exists():
        shutil.rmtree(source)
    shutil.copytree(Path(django_package.__file__).parent, source, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    # A checkout at rest, as a re-analysis finds one: a file changed in the last SETTLE_NS is read whatever its
    # stamp says, and the copy has just changed every file.
    time.sleep(DirectorySource.SETTLE_NS / 1e9)
    files = sum(len(f) for _, _, f in os.walk(source))
    size = sum(os.path.getsize(os.path.join(d, n)) for d, _, f in os.walk(source) for n in f)
    changed = source / "utils" / "text.py"
    original = changed.read_text()
    conn = psycopg.connect(ctx.dsn(), autocommit=True)
    floors, fulls, reruns, git_fulls, git_reruns, peaks, statuses = [], [], [], [], [], [], []

    def analyse(into: list, path: Path, commit: str = "") -> None:
        """Time one analysis by a worker process into ``into``, keeping its peak memory and how it ended."""
        run = _analyse_once(ctx, path, commit)
        into.append(run.seconds)
        peaks.append(run.peak_mib)
        statuses.append(run.status)
        if run.status != "completed":
            print(run.proc.text()[-3000:])

    for repeat in range(ctx.args.repeats):
        changed.write_text(original)
        floors.append(_floor_analysis(source))
        reset_partha_pg(conn)  # no cached facts: a full analysis
        analyse(fulls, source)
        changed.write_text(original + f"\n\n# bench edit {repeat}\n")
        analyse(reruns, source)
        print(f"   floor {floors[-1]:.2f} s  full {fulls[-1] or 0:.2f} s  one-file re-analysis {reruns[-1] or 0:.2f} s  peak {max(peaks[-2:]):.0f} MiB", flush=True)
    changed.write_text(original)
    repository = OUT / "django-git"
    first, second = _two_revisions(source, repository, changed.relative_to(source))
    for repeat in range(ctx.args.repeats):
        reset_partha_pg(conn)
        analyse(git_fulls, repository, first)
        analyse(git_reruns, repository, second)
        print(f"   revision: full {git_fulls[-1] or 0:.2f} s  next commit (one file changed) {git_reruns[-1] or 0:.2f} s", flush=True)
    pipeline = default_pipeline()
    return {
        "files": files,
        "bytes": size,
        "django_version": django_package.get_version(),
        "pipeline": f"{type(pipeline).__module__}.{type(pipeline).__qualname__}",
        "stages": [stage.name for stage in pipeline.stages],
        "floor_seconds": median(floors),
        "full_seconds": median(fulls),
        "rerun_seconds": median(reruns),
        "full_over_floor": median([f / fl for f, fl in zip(fulls, floors) if f]),
        "rerun_over_full": median([r / f for r, f in zip(reruns, fulls) if r and f]),
        "git_full_seconds": median(git_fulls),
        "git_rerun_seconds": median(git_reruns),
        "git_rerun_over_full": median([r / f for r, f in zip(git_reruns, git_fulls) if r and f]),
        "peak_rss_mib": max(peaks),
        "statuses": statuses,
    }


# -- scale: a synthetic monorepo ------------------------------------------------------------------------------

SCALE_FILES = 25_000
SCALE_LARGE_FILES = 100_000
SCALE_CHANGED = "services/svc001/src/svc001/mod_03.py"  # a module in the middle of the import graph


def _scale(ctx, files: int) -> dict:
    """Analyse a generated monorepo of ``files`` files: floor, full analysis, one-file re-analysis, peak memory."""
    from . import monorepo

    source = OUT / f"monorepo-{files}"
    if source.exists():
        shutil.rmtree(source)
    t0 = time.monotonic()
    tree = monorepo.generate(source, files)
    generated_in = time.monotonic() - t0
    size = sum(os.path.getsize(source / path) for path in tree.paths)
    changed = source / SCALE_CHANGED
    original = changed.read_text()
    conn = psycopg.connect(ctx.dsn(), autocommit=True)
    processes = os.cpu_count() or 1
    floors, grammar_floors, fulls, reruns, shared, statuses = [], [], [], [], [], []
    full_peaks, rerun_peaks, shared_peaks, full_cpus, shared_cpus = [], [], [], [], []

    def analyse(into, peaks, parsing_processes=1, cpus=None):
        run = _analyse_once(ctx, source, processes=parsing_processes)
        into.append(run.seconds)
        peaks.append(run.peak_mib)
        if cpus is not None:
            cpus.append(run.cpu_seconds)
        statuses.append(run.status)
        if run.status != "completed":
            print(run.proc.text()[-3000:])

    for repeat in range(ctx.args.repeats):
        changed.write_text(original)
        floors.append(_floor_analysis(source))
        grammar_floors.append(_grammar_floor(source))
        reset_partha_pg(conn)  # no cached facts: a full analysis
        analyse(fulls, full_peaks, cpus=full_cpus)
        changed.write_text(original + f"\n\n# bench edit {repeat}\n")
        analyse(reruns, rerun_peaks)
        reset_partha_pg(conn)  # the full analysis again, its parsing shared out over a process per core
        analyse(shared, shared_peaks, processes, cpus=shared_cpus)
        print(f"   {files:,} files: floor {floors[-1]:.2f} s (every grammar {grammar_floors[-1]:.2f} s)  full {fulls[-1] or 0:.2f} s (peak {full_peaks[-1]:.0f} MiB)  "
              f"one-file re-analysis {reruns[-1] or 0:.2f} s (peak {rerun_peaks[-1]:.0f} MiB)  "
              f"full over {processes} processes {shared[-1] or 0:.2f} s (peak {shared_peaks[-1]:.0f} MiB)  "
              f"CPU full {full_cpus[-1]:.1f} s, over processes {shared_cpus[-1]:.1f} s", flush=True)
    return {
        "files": len(tree.paths),
        "bytes": size,
        "generated_seconds": round(generated_in, 1),
        "changed": SCALE_CHANGED,
        "floor_seconds": median(floors),
        "full_seconds": median(fulls),
        "rerun_seconds": median(reruns),
        "full_over_floor": median([f / fl for f, fl in zip(fulls, floors) if f]),
        "grammar_floor_seconds": median(grammar_floors),
        "full_over_grammar_floor": median([f / fl for f, fl in zip(fulls, grammar_floors) if f]),
        "rerun_over_full": median([r / f for r, f in zip(reruns, fulls) if r and f]),
        "shared_processes": processes,
        "shared_full_seconds": median(shared),
        "shared_full_over_floor": median([f / fl for f, fl in zip(shared, floors) if f]),
        "full_cpu_seconds": median(full_cpus),
        "shared_full_cpu_seconds": median(shared_cpus),
        "peak_rss_mib": max(full_peaks + rerun_peaks + shared_peaks),
        "full_peak_rss_mib": full_peaks,
        "rerun_peak_rss_mib": rerun_peaks,
        "shared_full_peak_rss_mib": shared_peaks,
        "statuses": statuses,
    }


def scale(ctx):
    """The 25,000-file synthetic monorepo: peak worker memory (and its time against the floor, for reference)."""
    return _scale(ctx, SCALE_FILES)


def scale_large(ctx):
    """The 100,000-file synthetic monorepo (opt-in: ``--scale``): peak memory, time against the floor, re-analysis."""
    return _scale(ctx, SCALE_LARGE_FILES)
