"""Checks the commands make before touching the queue, so a missing or unmigrated database is a clear error."""

from django.core.management.base import CommandError
from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections
from django.db.migrations.executor import MigrationExecutor


def ensure_database_ready(using: str = DEFAULT_DB_ALIAS) -> None:
    """Raise ``CommandError`` unless the database answers and every migration is applied."""
    connection = connections[using]
    try:
        executor = MigrationExecutor(connection)
        pending = executor.migration_plan(executor.loader.graph.leaf_nodes())
    except DatabaseError as exc:
        # The driver's message can quote the connection string; say what failed without it.
        raise CommandError(
            f"Cannot reach the {connection.vendor} database ({exc.__class__.__name__}); check DATABASE_URL and that the server is running."
        ) from None
    if pending:
        raise CommandError("The database is not migrated: run `python manage.py migrate` first.")
