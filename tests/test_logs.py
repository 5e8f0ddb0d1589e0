"""ANALYSIS_LOG_FORMAT=json: one JSON object per line with the event's fields."""

import json
import logging
import subprocess
import sys

from analysis_jobs.logs import JsonFormatter, fields_of
from tests.conftest import ROOT


def test_a_job_event_becomes_fields():
    record = logging.LogRecord("analysis_jobs.worker", logging.INFO, __file__, 1,
                               "job id=%s attempt=%s stage=%s state=running worker=%s", (7, 1, "extract", "w1"), None)
    line = json.loads(JsonFormatter().format(record))
    assert {key: line[key] for key in ("job", "attempt", "stage", "state", "worker", "level")} == {
        "job": 7, "attempt": 1, "stage": "extract", "state": "running", "worker": "w1", "level": "INFO",
    }
    assert line["message"] == "job id=7 attempt=1 stage=extract state=running worker=w1"


def test_a_worker_event_keeps_its_id_as_id_and_an_empty_value_as_empty():
    assert fields_of("worker id=w1 event=started burst=True") == {"id": "w1", "event": "started", "burst": "True"}
    assert fields_of("job id=3 attempt=1 stage= state=cancelled worker=w1")["stage"] == ""


def test_the_setting_switches_a_command_to_json_lines(tmp_path):
    env = {"ANALYSIS_LOG_FORMAT": "json", "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}", "PATH": "/usr/bin:/bin"}
    subprocess.run([sys.executable, str(ROOT / "manage.py"), "migrate", "-v0"], env=env, check=True, cwd=ROOT)
    run = subprocess.run([sys.executable, str(ROOT / "manage.py"), "runworker", "--burst"], env=env, cwd=ROOT,
                         capture_output=True, text=True, check=True)
    events = [json.loads(line) for line in run.stderr.splitlines() if line.startswith("{")]
    assert [event["event"] for event in events] == ["started", "stopped"]
    assert all(event["logger"].startswith("analysis_jobs") for event in events)
