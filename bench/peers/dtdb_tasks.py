"""The no-op task for django-tasks-db (imported by its dotted path, so the worker finds it)."""

from django_tasks import task


@task()
def noop():
    return None


def enqueue(count: int) -> None:
    for _ in range(count):
        noop.enqueue()
