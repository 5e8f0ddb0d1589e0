"""Django settings for django-tasks-db's ``db_worker``: the project's settings plus the Tasks database backend.

The database is ``DATABASE_URL``, as for the project; nothing of the backend's defaults is changed.
"""

from partha.settings import *  # noqa: F403

INSTALLED_APPS = [*INSTALLED_APPS, "django_tasks", "django_tasks_db"]  # noqa: F405
TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
LOGGING = {"version": 1, "disable_existing_loggers": False}
