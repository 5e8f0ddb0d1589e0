"""How ``DATABASE_URL`` becomes Django's database settings."""

import pytest
from django.core.exceptions import ImproperlyConfigured

from partha.settings import _database


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
