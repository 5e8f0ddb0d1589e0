"""How the environment becomes Django's settings: ``DATABASE_URL``, and the counts the workers read."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from partha.settings import _count, _database

ROOT = Path(__file__).resolve().parent.parent


def test_a_postgresql_url_gets_prepared_statements_for_the_hot_path_unless_turned_off(monkeypatch):
    url = "postgres://user:secret@db.example:5432/partha"
    assert _database(url)["OPTIONS"]["prepare_threshold"] == 5
    monkeypatch.setenv("DATABASE_PREPARED_STATEMENTS", "off")
    assert _database(url)["OPTIONS"]["prepare_threshold"] is None


def test_a_sqlite_url_gets_wal_and_a_busy_timeout():
    options = _database("sqlite:////tmp/partha.sqlite3")["OPTIONS"]
    assert (options["transaction_mode"], options["timeout"]) == ("IMMEDIATE", 20.0)
    assert "journal_mode=WAL" in options["init_command"]


def test_an_unsupported_engine_is_refused_with_a_clear_message():
    with pytest.raises(ImproperlyConfigured, match="unsupported engine"):
        _database("mysql://user@db.example/partha")


@pytest.mark.parametrize("value", ["0", "-2", "two", ""])
def test_a_process_count_that_is_not_a_whole_number_of_at_least_one_stops_the_command_with_one_line(value, tmp_path):
    env = {**os.environ, "ANALYSIS_EXTRACT_PROCESSES": value, "DATABASE_URL": f"sqlite:///{tmp_path}/db.sqlite3"}
    done = subprocess.run([sys.executable, str(ROOT / "manage.py"), "runworker", "--burst"], env=env, capture_output=True, text=True)
    assert done.returncode == 1
    assert done.stderr == f"Error: ANALYSIS_EXTRACT_PROCESSES must be a whole number of at least 1, not {value!r}.\n"


def test_a_process_count_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("ANALYSIS_EXTRACT_PROCESSES", "3")
    assert _count("ANALYSIS_EXTRACT_PROCESSES", default=1) == 3
    monkeypatch.delenv("ANALYSIS_EXTRACT_PROCESSES")
    assert _count("ANALYSIS_EXTRACT_PROCESSES", default=1) == 1


@pytest.mark.parametrize("value", ["!", "dist/,cache\\"])
def test_an_exclude_pattern_git_cannot_match_stops_the_command_with_one_line(value, tmp_path):
    env = {**os.environ, "ANALYSIS_EXCLUDE": value, "DATABASE_URL": f"sqlite:///{tmp_path}/db.sqlite3"}
    done = subprocess.run([sys.executable, str(ROOT / "manage.py"), "runworker", "--burst"], env=env, capture_output=True, text=True)
    assert done.returncode == 1
    bad = value.rsplit(",", 1)[-1]
    assert done.stderr == f"Error: ANALYSIS_EXCLUDE holds {bad!r}, which is not a gitignore pattern git can match.\n"
