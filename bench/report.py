"""Render the figures as BENCHMARKS.md: machine and versions, every target met or not with its figure, the tables.

``python -m bench.report [REPEATS]`` renders the last run's ``var/bench/results.json`` again without running it.
"""


def _f(value, digits=0, unit=""):
    if value is None:
        return "n/a"
    return f"{value:,.{digits}f}{unit}"


def _verdict(ok):
    if ok is None:
        return "not measured"
    return "**met**" if ok else "**not met**"


def targets(r):
    """Return (target, figure, verdict) rows for every target of the issue that this run measured."""
    rows = []
    d = r.get("drain")
    if d:
        t, ratios = d["table"], d["ratios"]
        peers = {p: ratios.get(f"partha-pg/{p}/4") for p in ("dtdb", "procrastinate")}
        best = min((v for v in peers.values() if v), default=None)
        rows.append((
            "Drain at W=4 (PostgreSQL) >= the best peer's",
            f"{_f(t['partha-pg/4']['rate'])} jobs/s; {_f(peers['dtdb'], 2)}x django-tasks-db, "
            f"{_f(peers['procrastinate'], 2)}x procrastinate",
            _verdict(best is not None and best >= 1.0),
        ))
        floor = ratios.get("partha-pg/floor/4")
        rows.append(("Drain at W=4 >= half the floor's", f"{_f(floor, 2)}x the floor ({_f(t['floor/4']['rate'])} jobs/s)", _verdict(floor is not None and floor >= 0.5)))
        w = [t[f"partha-pg/{n}"]["rate"] for n in (1, 2, 4)]
        busy = [t[f"partha-pg/{n}"].get("cpu_busy") for n in (1, 2, 4)]
        rows.append((
            "No collapse: W=4 >= W=2 >= W=1 (PostgreSQL)",
            " / ".join(_f(x) for x in w) + " jobs/s"
            + (f"; CPU busy {' / '.join(_f(b * 100) + '%' for b in busy)}" if all(b is not None for b in busy) else ""),
            _verdict(all(x is not None for x in w) and w[2] >= w[1] >= w[0]),
        ))
        lost = t["partha-pg/4"]
        rows.append((
            "CAS claims lost at W=4 < 5%",
            f"{lost['lost']} of {lost['lost'] + lost['claimed']} ({_f((lost['lost_share'] or 0) * 100, 2)}%)",
            _verdict(lost["lost_share"] is not None and lost["lost_share"] < 0.05),
        ))
    lat = r.get("latency")
    if lat:
        pg, lite = lat["postgresql"], lat["sqlite"]
        rows.append((
            f"Start latency, PostgreSQL (poll interval {pg['poll_interval']:g} s): p50 <= 20 ms, p95 <= 50 ms",
            f"p50 {_f(pg['p50_ms'], 1)} ms, p95 {_f(pg['p95_ms'], 1)} ms",
            _verdict(pg["p50_ms"] <= 20 and pg["p95_ms"] <= 50),
        ))
        rows.append((
            f"Start latency, SQLite: at most the poll interval ({lite['poll_interval']:g} s)",
            f"p50 {_f(lite['p50_ms'])} ms, p95 {_f(lite['p95_ms'])} ms, max {_f(lite['max_ms'])} ms",
            _verdict(lite["max_ms"] <= lite["poll_interval"] * 1000),
        ))
        rows.append((
            "Poll interval can grow to 5 s without hurting start latency",
            f"measured at {pg['poll_interval']:g} s: p95 {_f(pg['p95_ms'], 1)} ms",
            _verdict(pg["poll_interval"] >= 5 and pg["p95_ms"] <= 50),
        ))
    idle = r.get("idle")
    if idle:
        rows.append((
            "Idle worker: at most one query per poll interval",
            f"{_f(idle['per_poll_interval'], 2)} statements per interval: {_f(idle['claim_polls_per_interval'], 2)} claim poll "
            f"+ the stale sweep every {idle['sweep_interval']:g} s ({idle['sweeps']} in {idle['window_seconds']:g} s)",
            _verdict(idle["per_poll_interval"] <= 1.0),
        ))
    flat = r.get("flat")
    if flat:
        rows.append((
            f"Flat claim cost: W=2 with {flat['finished']:,} finished >= 0.8x fresh",
            f"{_f(flat['ratio'], 2)}x ({_f(flat['big_rate'])} vs {_f(flat['fresh_rate'])} jobs/s)",
            _verdict(flat["ratio"] is not None and flat["ratio"] >= 0.8),
        ))
        uses = "job_claim_idx" in flat["explain_claim"] and "job_expired_lease_idx" in flat["explain_sweep"]
        rows.append(("Claim and sweep queries use their indexes", "job_claim_idx, job_expired_lease_idx (EXPLAIN below)" if uses else "see EXPLAIN below", _verdict(uses)))
    enq = r.get("enqueue")
    if enq:
        pg = enq["postgresql"]
        rows.append((
            f"Bulk enqueue >= 5,000 jobs/s for {enq['sources']:,} sources",
            f"{_f(pg['in_process_per_s'])} jobs/s (command body, PostgreSQL); {_f(pg['command_per_s'])} jobs/s with process start-up; "
            f"SQLite {_f(enq['sqlite']['command_per_s'])} jobs/s with start-up",
            _verdict((pg["in_process_per_s"] or 0) >= 5000),
        ))
    adm = r.get("admin")
    if adm:
        page = adm["pages"]["list"]
        rows.append((f"Admin job list with {adm['rows']:,} rows < 300 ms", f"{_f(page['ms'])} ms ({page['queries']} queries)", _verdict(page["ms"] < 300)))
        overview = adm["pages"].get("queue overview")
        if overview:
            rows.append((f"Queue overview (and `analysis_status --summary`) with {adm['rows']:,} rows < 300 ms", f"{_f(overview['ms'])} ms ({overview['queries']} queries)", _verdict(overview["ms"] < 300)))
    an = r.get("analysis")
    if an:
        rows.append(("Full analysis of Django's source <= 1.5x the floor", f"{_f(an['full_over_floor'], 2)}x ({_f(an['full_seconds'], 2)} s vs {_f(an['floor_seconds'], 2)} s)", _verdict(an["full_over_floor"] is not None and an["full_over_floor"] <= 1.5)))
        rows.append(("Re-analysis after a one-file change <= 10% of the full one", f"{_f((an['rerun_over_full'] or 0) * 100, 1)}% ({_f(an['rerun_seconds'], 2)} s)", _verdict(an["rerun_over_full"] is not None and an["rerun_over_full"] <= 0.10)))
        if an.get("git_rerun_over_full") is not None:
            rows.append(("The same, for the next git commit", f"{_f(an['git_rerun_over_full'] * 100, 1)}% ({_f(an['git_rerun_seconds'], 2)} s of {_f(an['git_full_seconds'], 2)} s)", _verdict(an["git_rerun_over_full"] <= 0.10)))
        rows.append(("Worker peak memory during analysis < 250 MB", f"{_f(an['peak_rss_mib'])} MiB", _verdict(an["peak_rss_mib"] < 250 * 1e6 / 2**20)))
    sc = r.get("scale")
    if sc:
        rows.append((f"Scale: {sc['files']:,}-file monorepo, worker peak memory < 400 MB", f"{_f(sc['peak_rss_mib'])} MiB", _verdict(sc["peak_rss_mib"] < 400 * 1e6 / 2**20)))
    big = r.get("scale_large")
    if big:
        rows.append((f"Scale: {big['files']:,}-file monorepo, worker peak memory < 1 GB", f"{_f(big['peak_rss_mib'])} MiB", _verdict(big["peak_rss_mib"] < 1e9 / 2**20)))
        rows.append((f"Scale: {big['files']:,}-file monorepo, full analysis <= 1.5x the floor", f"{_f(big['full_over_floor'], 2)}x ({_f(big['full_seconds'], 1)} s vs {_f(big['floor_seconds'], 1)} s)", _verdict(big["full_over_floor"] is not None and big["full_over_floor"] <= 1.5)))
        if big.get("shared_full_seconds") is not None:
            rows.append((f"The same, parsing over {big['shared_processes']} processes (`ANALYSIS_EXTRACT_PROCESSES={big['shared_processes']}`)", f"{_f(big['shared_full_over_floor'], 2)}x ({_f(big['shared_full_seconds'], 1)} s)", _verdict(big["shared_full_over_floor"] <= 1.5)))
        rows.append((f"Scale: {big['files']:,}-file monorepo, re-analysis after a one-file change <= 15% of the full one", f"{_f((big['rerun_over_full'] or 0) * 100, 1)}% ({_f(big['rerun_seconds'], 1)} s)", _verdict(big["rerun_over_full"] is not None and big["rerun_over_full"] <= 0.15)))
    return rows


def render(r, args) -> str:
    m = r["machine"]
    out = [
        "# Benchmarks",
        "",
        "Written by `scripts/bench` (the suite is in `bench/`; `python -m bench.run --help` lists its options). Every figure",
        f"is the median of {args.repeats} runs; every comparison is a ratio of figures from the same run.",
        "",
        "| | |",
        "|---|---|",
        f"| date | {m['date']} (commit {m['commit']}) |",
        f"| machine | {m['cpu']}, {m['cores']} cores, {m['memory_gib']} GiB, {m['os']} |",
        f"| software | Python {m['python']}, PostgreSQL {m['postgresql']} (throwaway server: fsync off), SQLite {m['sqlite']} |",
        "| packages | " + ", ".join(f"{k} {v}" for k, v in m["packages"].items()) + " |",
        f"| suite run time | {r.get('elapsed_seconds', '?')} s |",
        "",
        "## Targets",
        "",
        "| target | figure | |",
        "|---|---|---|",
    ]
    out += [f"| {a} | {b} | {c} |" for a, b, c in targets(r)]
    d = r.get("drain")
    if d:
        out += [
            "",
            f"## Drain: {d['jobs']:,} no-op jobs, W worker processes",
            "",
            "Steady rate: jobs done between 20% and 90% of the queue over the time between them (process start-up and",
            "the tail left out alike for every system). Jobs are committed before the workers start. This project's",
            "no-op job is a pipeline with no stages: claim, lease, snapshot, seal, complete. The floor is a plain psycopg",
            "loop on the same table (oldest-queued read, guarded claim, guarded completion, each its own transaction);",
            "its one-statement form completes the job in hand and claims the next in one statement, the least a queue",
            "can do per job. Peers run with their default settings, one process per worker, concurrency 1.",
            "",
            "| system | W=1 | W=2 | W=4 | runs at W=4 |",
            "|---|---:|---:|---:|---|",
        ]
        keys = []
        for row in d["table"].values():
            if row["key"] not in keys:
                keys.append(row["key"])
        for key in keys:
            cells = [d["table"][f"{key}/{w}"] for w in (1, 2, 4)]
            out.append(f"| {cells[0]['system']} | " + " | ".join(_f(c["rate"]) for c in cells) + f" | {', '.join(map(str, cells[2]['rates']))} |")
        out += [
            "",
            "Share of both cores busy over the same steady window (from `/proc/stat`; the bench's own polling included):",
            "",
            "| system | W=1 | W=2 | W=4 |",
            "|---|---:|---:|---:|",
        ]
        for key in keys:
            cells = [d["table"][f"{key}/{w}"] for w in (1, 2, 4)]
            out.append(f"| {cells[0]['system']} | " + " | ".join(
                f"{_f(c['cpu_busy'] * 100)}%" if c.get("cpu_busy") is not None else "-" for c in cells) + " |")
        chained = [d["table"].get(f"floor-chained/{w}", {}).get("rate") for w in (2, 4)]
        if all(chained):
            out += ["", f"The floor's one-statement form makes a third of the floor's round trips per job; from W=2 to W=4 it went from "
                        f"{_f(chained[0])} to {_f(chained[1])} jobs/s ({(chained[1] / chained[0] - 1) * 100:+.0f}%)."]
        out += ["", "Ratios of this project on PostgreSQL to each other system (median of the per-run ratios):", "", "| vs | W=1 | W=2 | W=4 |", "|---|---:|---:|---:|"]
        for other in ("floor", "dtdb", "procrastinate", "partha-sqlite"):
            out.append(f"| {other} | " + " | ".join(_f(d["ratios"].get(f"partha-pg/{other}/{w}"), 2) for w in (1, 2, 4)) + " |")
        losses = [f"W={w}: {d['table'][f'partha-pg/{w}']['lost']} lost of {d['table'][f'partha-pg/{w}']['claimed'] + d['table'][f'partha-pg/{w}']['lost']}" for w in (1, 2, 4)]
        out += ["", "Claims lost to another worker (PostgreSQL, all runs): " + "; ".join(losses) + "."]
    lat = r.get("latency")
    if lat:
        out += ["", "## Start latency", "", "One idle worker; jobs enqueued one at a time at 20/s; enqueue (`created_at`) to claim (`started_at`).", "", "| engine | poll interval | p50 | p95 | max |", "|---|---:|---:|---:|---:|"]
        for key, v in lat.items():
            out.append(f"| {key} | {v['poll_interval']:g} s | {_f(v['p50_ms'], 1)} ms | {_f(v['p95_ms'], 1)} ms | {_f(v['max_ms'], 1)} ms |")
    idle = r.get("idle")
    if idle:
        out += [
            "", "## Idle cost", "",
            f"One idle worker on PostgreSQL, poll interval {idle['poll_interval']:g} s, for {idle['window_seconds']:g} s; every statement the",
            f"server logged for its database: {idle['statements']} ({_f(idle['per_poll_interval'], 2)} per poll interval), of which",
            f"{_f(idle['claim_polls_per_interval'] * idle['window_seconds'] / idle['poll_interval'])} claim polls and {idle['sweeps']} stale sweeps (sweep interval {idle['sweep_interval']:g} s).",
            "The LISTEN connection itself sends nothing while it waits.",
        ]
    flat = r.get("flat")
    if flat:
        out += [
            "", "## Flat claim cost", "",
            f"W=2 draining {flat['jobs_per_run']:,} of {flat['queued']:,} queued jobs: fresh table {_f(flat['fresh_rate'])} jobs/s, with "
            f"{flat['finished']:,} finished jobs beside them ({flat['rows']:,} rows) {_f(flat['big_rate'])} jobs/s: {_f(flat['ratio'], 2)}x.",
            "", "The claim (one statement: candidate `FOR UPDATE SKIP LOCKED`, the snapshot's insert, the guarded update and the lapsed-lease check), `EXPLAIN ANALYZE` on the big table with 1,000 jobs running under live leases:", "", "```", flat["explain_claim"], "```",
            "", "The stale sweep's scan:", "", "```", flat["explain_sweep"], "```",
        ]
    enq = r.get("enqueue")
    if enq:
        out += [
            "", "## Enqueue", "",
            f"`enqueue_analysis --from-file` with {enq['sources']:,} existing directories. PostgreSQL: {_f(enq['postgresql']['in_process_per_s'])} jobs/s for the command",
            f"itself (run in the bench process), {_f(enq['postgresql']['command_per_s'])} jobs/s as a fresh process including Python and Django start-up.",
            f"SQLite, as a fresh process: {_f(enq['sqlite']['command_per_s'])} jobs/s.",
        ]
    adm = r.get("admin")
    if adm:
        out += ["", "## Admin", "", f"The job changelist and the queue overview over {adm['rows']:,} rows, as a superuser, through Django's test client (warm).", "", "| page | time | queries | slowest query |", "|---|---:|---:|---:|"]
        for name, p in adm["pages"].items():
            out.append(f"| {name} | {_f(p['ms'])} ms | {p['queries']} | {_f(p['slowest_query_ms'], 1)} ms |")
        out += ["", "Search (`?q=`) matches substrings of the source path and has no index that serves it."]
    an = r.get("analysis")
    if an:
        out += [
            "", "## Analysis", "",
            f"Django {an['django_version']}'s own source tree ({an['files']:,} files, {an['bytes'] / 2**20:.1f} MiB), analysed by one `runworker` process with the",
            f"pipeline `analysis_jobs.pipeline.default_pipeline()` returned at the time of the run: `{an['pipeline']}`, stages {', '.join(an['stages'])}.",
            "Time is the job's `started_at` to `completed_at`; the floor reads every file, hashes it with SHA-256 and",
            "`ast.parse`s the Python files, in one process. The re-analysis follows a one-line change to one file.",
            "",
            "| floor | full analysis | re-analysis | peak RSS |",
            "|---:|---:|---:|---:|",
            f"| {_f(an['floor_seconds'], 2)} s | {_f(an['full_seconds'], 2)} s ({_f(an['full_over_floor'], 2)}x) | {_f(an['rerun_seconds'], 2)} s ({_f((an['rerun_over_full'] or 0) * 100, 1)}%) | {_f(an['peak_rss_mib'])} MiB |",
        ]
        if an.get("git_full_seconds") is not None:
            out += [
                "",
                "The same tree as a git revision (committed, then packed as a clone is; read from the object store), and the",
                "next commit, which changes that one file: full analysis "
                f"{_f(an['git_full_seconds'], 2)} s, re-analysis {_f(an['git_rerun_seconds'], 2)} s ({_f((an['git_rerun_over_full'] or 0) * 100, 1)}%).",
            ]
    scales = [r[key] for key in ("scale", "scale_large") if r.get(key)]
    if scales:
        out += [
            "", "## Scale", "",
            "A synthetic monorepo written by `bench/monorepo.py` (seed 0): Python services with tests and a `conftest.py`",
            "each, namespace packages, JS/TS workspace packages with a `package.json` and an `index.ts` each, requirements,",
            "pyproject and package-lock manifests, Dockerfiles, Terraform modules and documentation; files of 1-8 KB, their",
            "times set an hour back. Analysed as Django's source is above: one `runworker --burst` process on PostgreSQL,",
            "time from the job's `started_at` to `completed_at`, peak RSS the worker's `ru_maxrss` (the highest of the runs;",
            "for a worker parsing over processes of its own, `ANALYSIS_EXTRACT_PROCESSES` set to the machine's cores, the peak of",
            "the worker and those processes together, sampled from `/proc` every 50 ms, where it is above `ru_maxrss`), the same floor",
            "(read, SHA-256, `ast.parse` of the Python files; the JS/TS, manifests and Terraform are read and hashed only),",
            "and beside it a floor that parses every source file the pipeline parses with the tree-sitter grammar the",
            "pipeline reads it with (Python, JavaScript, TypeScript, HCL, Dockerfile). The targets are judged against the",
            "first, as they were set; the second is the parse no analysis can skip (tree-sitter parses faster than `ast`).",
            "CPU is the user and system time of the worker and its parsing processes (`wait4`, start-up included): divided",
            "by the cores, it is the least time that work could take on this machine, however it were shared out.",
            f"The re-analysis follows a one-line change to `{scales[0]['changed']}`. The 100,000-file tree is opt-in: `--scale`.",
            "",
            "| files | size | floor | every-grammar floor | full analysis | re-analysis | full, parsing over processes | CPU, full / over processes | peak RSS, full / re-analysis / over processes |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for sc in scales:
            out.append(
                f"| {sc['files']:,} | {sc['bytes'] / 2**20:.0f} MiB | {_f(sc['floor_seconds'], 1)} s "
                f"| {_f(sc.get('grammar_floor_seconds'), 1)} s ({_f(sc.get('full_over_grammar_floor'), 2)}x) "
                f"| {_f(sc['full_seconds'], 1)} s ({_f(sc['full_over_floor'], 2)}x) "
                f"| {_f(sc['rerun_seconds'], 1)} s ({_f((sc['rerun_over_full'] or 0) * 100, 1)}%) "
                f"| {_f(sc.get('shared_full_seconds'), 1)} s ({_f(sc.get('shared_full_over_floor'), 2)}x, {sc.get('shared_processes', '-')} processes) "
                f"| {_f(sc.get('full_cpu_seconds'), 1)} / {_f(sc.get('shared_full_cpu_seconds'), 1)} s "
                f"| {_f(max(sc['full_peak_rss_mib']))} / {_f(max(sc['rerun_peak_rss_mib']))} / {_f(max(sc.get('shared_full_peak_rss_mib') or [0]))} MiB |"
            )
    out += [
        "",
        "## Reading the figures",
        "",
        "- These machines are noisy (the cores may be shared with other work), which is why single runs can vary by",
        "  up to 2x and why only ratios from the same run are compared. When the CPU table shows both cores busy at",
        "  W=2, adding workers cannot add throughput: W=4 then measures what four workers, their server processes and",
        "  the bench's poller cost each other on two cores (more switching per job), as much as contention for the table.",
        "- A no-op job of this project costs 3 statements on PostgreSQL, as the floor does: the claim (candidate read",
        "  with `FOR UPDATE SKIP LOCKED`, compare-and-swap, the snapshot's insert and the lapsed-lease check, returning",
        "  the job's inputs), the seal (the job's guarded update and the snapshot's in one statement) and the",
        "  completion. They are written as SQL (`analysis_jobs/statements.py`) and prepared on the server, where the",
        "  ORM would build and compile each one again per job; procrastinate makes 2 procedure calls per job.",
        "- Reproduce with `scripts/bench` (everything but the 100,000-file tree; add `--scale` for it) or e.g.",
        "  `scripts/bench --only drain --jobs 1000 --repeats 5`, `scripts/bench --only scale,scale_large`;",
        "  the raw figures of the last run are in `var/bench/results.json`, each worker's log in `var/bench/`.",
        "",
    ]
    return "\n".join(out)


if __name__ == "__main__":
    import json
    import sys

    from .harness import OUT, ROOT

    class _Args:
        repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 3

    results = json.loads((OUT / "results.json").read_text())
    (ROOT / "BENCHMARKS.md").write_text(render(results, _Args))
