"""Settings for the bench process itself: the project's, plus a second (SQLite) database and the test client's host."""

import os

from partha.settings import *  # noqa: F403
from partha.settings import _database

if os.environ.get("BENCH_SQLITE_URL"):
    DATABASES["sqlite"] = _database(os.environ["BENCH_SQLITE_URL"])  # noqa: F405
ALLOWED_HOSTS = [*ALLOWED_HOSTS, "testserver"]  # noqa: F405
DEBUG = False
