"""``show_analysis``: a sealed snapshot's summary for people and scripts, and its canonical document byte for byte."""

import hashlib
import json
import subprocess
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from analysis_jobs.models import AnalysisJob
from analysis_jobs.pipeline import RepositoryPipeline
from analysis_jobs.worker import JobOutcome
from tests.pipeline_support import write_tree


def show(*args) -> str:
    out = StringIO()
    call_command("show_analysis", *[str(arg) for arg in args], stdout=out)
    return out.getvalue()


@pytest.fixture
def analysed(db, control_plane, make_worker, tmp_path):
    root = write_tree(tmp_path / "r", {
        "pkg/__init__.py": "",
        "pkg/app.py": "import requests\n\n\ndef main():\n    return requests.get('https://api.example.com/v1')\n",
        "bad.py": "def f(:\n",
        "web/app.js": "import React from 'react';\n",
        "requirements.txt": "requests==2.32.3\n",
        "Dockerfile": "FROM python:3.12-slim\n",
    })
    job, _ = control_plane.enqueue(str(root))
    worker = make_worker(RepositoryPipeline())
    assert worker.run(control_plane.claim_next("w1")) is JobOutcome.COMPLETED
    return AnalysisJob.objects.select_related("snapshot").get(pk=job.pk)


def test_the_summary_names_files_languages_modules_dependencies_services_iac_diagnostics_and_hash(analysed):
    text = show(analysed.pk)
    assert f"job {analysed.pk}  completed" in text
    assert analysed.snapshot.content_hash in text
    assert "files         6" in text
    assert "languages     python 3, dockerfile 1, javascript 1, text 1" in text
    assert "modules       python 3, javascript 1" in text
    assert "dependencies  npm 1 (undeclared 1); pypi 1 (direct 1)" in text
    assert "services      api.example.com" in text
    assert "images python:3.12-slim" in text
    assert "diagnostics   1" in text and "parse-error  bad.py:1" in text


def test_json_gives_the_summary_to_scripts(analysed):
    shown = json.loads(show(analysed.pk, "--json"))
    assert (shown["job"], shown["graph_hash"], shown["schema"]) == (analysed.pk, analysed.snapshot.content_hash, "ri.v1")
    assert shown["summary"]["dependencies"] == {
        "npm": {"locked": 0, "total": 1, "undeclared": 1}, "pypi": {"direct": 1, "locked": 0, "total": 1},
    }
    assert shown["diagnostics"] == [{"code": "parse-error", "line": 1, "message": "syntax error (the parser recovered what it could)", "path": "bad.py"}]


def test_facts_prints_the_canonical_document_byte_for_byte(analysed):
    assert show(analysed.pk, "--facts") == analysed.snapshot.read_facts()


@pytest.mark.process
def test_facts_piped_to_a_hash_gives_the_graph_hash_whatever_the_terminal_encoding(
    control_plane, make_worker, worker_env, manage_py, tmp_path
):
    root = write_tree(tmp_path / "r", {"\u65e5\u672c/caf\u00e9.py": "GREETING = '\u3053\u3093\u306b\u3061\u306f'\n"})
    job, _ = control_plane.enqueue(str(root))
    assert make_worker(RepositoryPipeline()).run(control_plane.claim_next("w1")) is JobOutcome.COMPLETED
    env = dict(worker_env, PYTHONIOENCODING="latin-1")  # a terminal that could not show the paths
    shown = subprocess.run([*manage_py, "show_analysis", str(job.pk), "--facts"], env=env, capture_output=True, check=True)
    snapshot = AnalysisJob.objects.get(pk=job.pk).snapshot
    assert "\u65e5\u672c/caf\u00e9.py" in snapshot.read_facts()
    assert hashlib.sha256(shown.stdout).hexdigest() == snapshot.content_hash


def test_a_job_without_a_sealed_snapshot_or_no_job_is_an_error(db, control_plane, tmp_path):
    job, _ = control_plane.enqueue(str(tmp_path))
    with pytest.raises(CommandError, match=f"Job {job.pk} has no sealed snapshot \\(it is queued\\)"):
        show(job.pk)
    with pytest.raises(CommandError, match="No job with id 999"):
        show(999)
    with pytest.raises(CommandError, match="not both"):
        show(job.pk, "--json", "--facts")
