"""
No repository content, secrets or connection passwords in logs or error messages. A real worker analyses a
source whose files hold a fake secret, many of them malformed so that every parser reports an error about the
very line that holds it; on PostgreSQL the worker's DATABASE_URL carries a password. Everything the run
printed or stored as a message is scanned for both.
"""

import json
import subprocess

import pytest
from django.db import connection

from analysis_jobs.control_plane import DatabaseControlPlane
from analysis_jobs.models import AnalysisJob, JobStatus

from .harness import ROOT, wait_until

SECRET = "AKIAFAKESECRET0123456789zz"
PASSWORD = "pw-FAKE-0987-never-print"


def _leaky_source(root):
    root.mkdir()
    files = {
        ".env": f"AWS_SECRET={SECRET}\n",
        "settings.py": f'AWS_SECRET = "{SECRET}"\n',
        "broken.py": f'token = "{SECRET}\n',  # unterminated string on the secret's line
        "setup.cfg": f"{SECRET} has no section\n",
        "requirements.txt": f"django==5 {SECRET} ===\n",
        "pyproject.toml": f"[project\nname = {SECRET}\n",
        "package.json": f'{{"name": {SECRET}}}\n',
        "docker-compose.yml": f"services:\n  a: [{SECRET}\n  b: : :\n",
        "main.tf": f'resource "x" {{ key = {SECRET} \n',
        "index.js": f"const k = '{SECRET};\n",
    }
    for name, text in files.items():
        (root / name).write_text(text)
    return root


def _worker_url(env):
    if connection.vendor != "postgresql":
        return env["DATABASE_URL"]
    # The suite's server trusts local connections, so any password is accepted: what matters is where it shows.
    scheme, rest = env["DATABASE_URL"].split("://", 1)
    credentials, host = rest.split("@", 1)
    return f"{scheme}://{credentials.split(':', 1)[0]}:{PASSWORD}@{host}"


@pytest.mark.process
def test_no_secret_or_password_reaches_a_log_or_a_message(workers, worker_env, manage_py, tmp_path):
    control_plane = DatabaseControlPlane()
    job, _ = control_plane.enqueue(str(_leaky_source(tmp_path / "leaky")))
    missing, _ = control_plane.enqueue(str(tmp_path / f"gone-{SECRET[:4]}"), max_attempts=1)  # fails: a message
    env = {"DATABASE_URL": _worker_url(worker_env), "ANALYSIS_LOG_LEVEL": "DEBUG"}
    worker = workers.start("--burst", "--poll-interval", "0", env=env)
    assert worker.wait(timeout=60) == 0, worker.log()[-3000:]
    job.refresh_from_db()
    missing.refresh_from_db()
    assert job.status == JobStatus.COMPLETED, (job.error_code, job.error_message)
    assert missing.status == JobStatus.FAILED and missing.error_code == "RI-SOURCE-NOT-FOUND"

    status = subprocess.run(
        [*manage_py, "analysis_status", "--json"], env=dict(worker_env, **env), cwd=ROOT, capture_output=True, text=True
    )
    assert status.returncode == 0
    facts = json.loads(job.snapshot.read_facts())
    diagnostics = [node["attrs"] for node in facts["nodes"] if node["kind"] == "diagnostic"]
    assert len(diagnostics) >= 5, "the fixture no longer makes the parsers complain; the scan would prove little"
    scanned = {
        "worker log": worker.log(),
        "analysis_status": status.stdout + status.stderr,
        "error messages": json.dumps(list(AnalysisJob.objects.values_list("error_code", "error_message"))),
        "diagnostic messages": json.dumps(diagnostics),
    }
    for where, text in scanned.items():
        assert SECRET not in text, f"the fake secret appears in the {where}"
        assert PASSWORD not in text, f"the database password appears in the {where}"
    wait_until(lambda: not worker.alive(), 5, what="the worker to be gone")
