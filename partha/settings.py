"""
Settings for the PARTHA project, read from the environment through django-environ.

Every setting has a default that works on one machine with no set-up: the database is a SQLite file in the
project folder. Point ``DATABASE_URL`` at PostgreSQL to share one queue between many machines. The README has
a table of every setting.
"""

import os
import warnings
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env")

DEBUG = env.bool("DEBUG", default=False)
SECRET_KEY = env.str("SECRET_KEY", default="partha-insecure-development-key-set-SECRET_KEY-in-production")
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]"])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "analysis_jobs",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "partha.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

WSGI_APPLICATION = "partha.wsgi.application"


def _database(url):
    """Return Django's database settings for ``url``, tuned so many worker processes can share it."""
    try:
        # django-environ warns about a URL it half understands by printing what it parsed, password included.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            config = environ.Env.db_url_config(url)
    except (ImproperlyConfigured, ValueError, KeyError) as exc:
        raise ImproperlyConfigured(f"DATABASE_URL is not a valid database URL ({exc.__class__.__name__}).") from None
    engine = config.get("ENGINE", "")
    if engine == "django.db.backends.sqlite3":
        # WAL lets readers run beside the one writer; the busy timeout makes a writer wait for the lock
        # instead of failing; IMMEDIATE takes the write lock when a transaction starts, so two transactions
        # never deadlock upgrading a read lock.
        config.setdefault("OPTIONS", {}).update(
            {
                "timeout": env.float("SQLITE_BUSY_TIMEOUT", default=20.0),
                "transaction_mode": "IMMEDIATE",
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            }
        )
        # The test database is a file too, so real worker processes can share it with the test; one per test
        # run, so two runs on one machine never share it.
        config.setdefault("TEST", {}).setdefault("NAME", str(BASE_DIR / "var" / f"test-db-{os.getpid()}.sqlite3"))
    elif engine in ("django.db.backends.postgresql", "django.db.backends.postgresql_psycopg2"):
        config["ENGINE"] = "django.db.backends.postgresql"
        options = config.setdefault("OPTIONS", {})
        options.setdefault("connect_timeout", 5)
        # psycopg prepares a statement that a server-binding cursor has run this many times on a connection; the
        # queue's hot path runs on one (analysis_jobs/statements.py), so the server stops re-planning the three
        # statements every job costs, and so do the bulk writes, so that no copy of their data is kept
        # (analysis_jobs/cursors.py). DATABASE_PREPARED_STATEMENTS=off is for a pooler in transaction mode
        # that cannot keep prepared statements.
        options.setdefault("prepare_threshold", 5 if env.bool("DATABASE_PREPARED_STATEMENTS", default=True) else None)
        config["CONN_HEALTH_CHECKS"] = True
    else:
        raise ImproperlyConfigured(f"DATABASE_URL names an unsupported engine {engine!r}: use sqlite:// or postgres://.")
    return config


DATABASES = {"default": _database(env.str("DATABASE_URL", default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}"))}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"

# The queue's knobs. Durations are seconds.
def _count(name, *, default):
    """Return the environment variable ``name`` as a whole number of at least 1 (``default`` when unset)."""
    text = env.str(name, default=str(default))
    if not text.strip().isdigit() or int(text) < 1:
        raise ImproperlyConfigured(f"{name} must be a whole number of at least 1, not {text!r}.")
    return int(text)


def _patterns(name, *, default):
    """Return the environment variable ``name`` as a list of gitignore patterns, each one git can match."""
    import pathspec

    patterns = env.list(name, default=default)
    for pattern in patterns:
        try:
            pathspec.GitIgnoreSpec.from_lines([pattern])
        except ValueError:
            raise ImproperlyConfigured(f"{name} holds {pattern!r}, which is not a gitignore pattern git can match.") from None
    return patterns


ANALYSIS_JOBS = {
    "LEASE_SECONDS": env.float("ANALYSIS_LEASE_SECONDS", default=30.0),
    "HEARTBEAT_SECONDS": env.float("ANALYSIS_HEARTBEAT_SECONDS", default=0.0) or None,  # None: a third of the lease
    "POLL_INTERVAL": env.float("ANALYSIS_POLL_INTERVAL", default=1.0),
    "SWEEP_INTERVAL": env.float("ANALYSIS_SWEEP_INTERVAL", default=5.0),
    "MAX_ATTEMPTS": env.int("ANALYSIS_MAX_ATTEMPTS", default=3),
    "RETRY_BASE_SECONDS": env.float("ANALYSIS_RETRY_BASE_SECONDS", default=2.0),
    "RETRY_CAP_SECONDS": env.float("ANALYSIS_RETRY_CAP_SECONDS", default=60.0),
    "SHUTDOWN_GRACE_SECONDS": env.float("ANALYSIS_SHUTDOWN_GRACE_SECONDS", default=10.0),
    # PostgreSQL: enqueues NOTIFY and idle workers LISTEN, so the poll interval is only the fallback.
    "NOTIFY": env.bool("ANALYSIS_NOTIFY", default=True),
    # Dotted path of a callable returning the pipeline workers run ('' for the default pipeline).
    "PIPELINE": env.str("ANALYSIS_PIPELINE", default=""),
    # A test hook: abort the process at this checkpoint (see analysis_jobs.faults). Off unless set.
    "FAULT_CHECKPOINT": env.str("ANALYSIS_FAULT_CHECKPOINT", default=""),
    # What the pipeline reads (see analysis_jobs.pipeline.config). Sizes are bytes.
    # gitignore-style patterns skipped in every source; setting ANALYSIS_EXCLUDE replaces the defaults.
    "EXCLUDE": _patterns("ANALYSIS_EXCLUDE", default=[
        ".git/", "node_modules/", "bower_components/", ".venv/", "venv/", "__pycache__/", "*.py[cod]", ".tox/",
        ".nox/", ".mypy_cache/", ".pytest_cache/", ".ruff_cache/", "build/", "dist/", "*.egg-info/", ".eggs/",
        ".next/", ".nuxt/", "coverage/", "htmlcov/", ".terraform/", "target/",
    ]),
    "HONOUR_GITIGNORE": env.bool("ANALYSIS_HONOUR_GITIGNORE", default=True),
    # The folders the HTTP API may queue sources from (comma-separated); unset, the API refuses every source.
    "SOURCE_ROOTS": env.list("ANALYSIS_SOURCE_ROOTS", default=[]),
    # Prometheus: the web process's /metrics (queue gauges from the database) is off unless set; a worker's
    # --metrics-port listens on this address.
    "METRICS": env.bool("ANALYSIS_METRICS", default=False),
    "METRICS_ADDRESS": env.str("ANALYSIS_METRICS_ADDRESS", default="127.0.0.1"),
    "MAX_FILE_BYTES": env.int("ANALYSIS_MAX_FILE_BYTES", default=2 * 1024 * 1024),  # larger files: listed, not read
    "MAX_TOTAL_BYTES": env.int("ANALYSIS_MAX_TOTAL_BYTES", default=1024 * 1024 * 1024),  # whole source, else fail
    "MAX_FILES": env.int("ANALYSIS_MAX_FILES", default=200_000),
    "MAX_SECONDS": env.float("ANALYSIS_MAX_SECONDS", default=900.0),
    # Processes each worker parses files with (1: in its own process); more shorten one big analysis.
    "EXTRACT_PROCESSES": _count("ANALYSIS_EXTRACT_PROCESSES", default=1),
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"},
        "json": {"()": "analysis_jobs.logs.JsonFormatter"},
    },
    # ANALYSIS_LOG_FORMAT=json: one JSON object per line, with job, attempt, worker, stage and event as fields.
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": env.str("ANALYSIS_LOG_FORMAT", default="plain")}},
    "loggers": {
        "analysis_jobs": {"handlers": ["console"], "level": env.str("ANALYSIS_LOG_LEVEL", default="INFO"), "propagate": True},
    },
}
