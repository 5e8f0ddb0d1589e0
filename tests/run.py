"""
Run the whole test suite twice, with the same tests and assertions: on SQLite, then on PostgreSQL.

PostgreSQL is the server ``PARTHA_TEST_POSTGRES_URL`` names, or else a throwaway cluster this script starts and
deletes. Arguments are passed to pytest (``python -m tests.run -k claim``). The exit status is non-zero if
either pass failed; the last line totals both.
"""

import os
import platform
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import django

from tests.pgserver import Cluster

ROOT = Path(__file__).resolve().parent.parent
VAR = ROOT / "var"


def _pytest(engine: str, url: str, extra: dict, args: list[str]) -> tuple[int, dict]:
    report = VAR / f"junit-{engine}-{os.getpid()}.xml"
    env = dict(os.environ, DATABASE_URL=url, PARTHA_TEST_ENGINE=engine, **extra)
    print(f"\n=== tests on {engine} (Django {django.get_version()}, Python {platform.python_version()}) ===", flush=True)
    code = subprocess.call([sys.executable, "-m", "pytest", f"--junitxml={report}", *args], cwd=ROOT, env=env)
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    if report.exists():
        suite = ET.parse(report).getroot()
        suite = suite.find("testsuite") if suite.tag == "testsuites" else suite
        counts = {key: int(suite.get(key, 0)) for key in counts}
        report.unlink()
    return code, counts


def main(args: list[str]) -> int:
    VAR.mkdir(exist_ok=True)
    results = [_pytest("sqlite", f"sqlite:///{VAR / f'test-{os.getpid()}.sqlite3'}", {}, args)]
    cluster = None
    url = os.environ.get("PARTHA_TEST_POSTGRES_URL")
    try:
        extra = {}
        if not url:
            cluster = Cluster().start()
            url, extra = cluster.url, cluster.environment()
        results.append(_pytest("postgresql", url, extra, args))
    finally:
        if cluster is not None:
            cluster.stop()
    passed = sum(c["tests"] - c["failures"] - c["errors"] - c["skipped"] for _, c in results)
    failed = sum(c["failures"] + c["errors"] for _, c in results)
    skipped = sum(c["skipped"] for _, c in results)
    codes = [code for code, _ in results]
    print(f"\nboth engines: {passed} passed, {failed} failed, {skipped} skipped")
    # pytest's 5 (nothing collected, e.g. a -k that matches nothing on one engine) is not a failure.
    return 0 if all(code in (0, 5) for code in codes) and any(code == 0 for code in codes) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
