"""The committed migrations describe the models exactly, and what they tune on the server is in place."""

from importlib import import_module
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import DatabaseError, connection, transaction


def test_the_models_have_no_changes_missing_from_the_migrations(db):
    out = StringIO()
    # --check exits non-zero (SystemExit) when a migration is missing, which fails this test.
    call_command("makemigrations", "--check", "--dry-run", stdout=out)
    assert "No changes detected" in out.getvalue()


@pytest.mark.postgres_only
def test_documents_are_compressed_with_lz4_where_the_server_offers_it(db):
    """A big document is sealed several times faster with lz4 than with pglz; a build without lz4 keeps pglz."""
    offered = import_module("analysis_jobs.migrations.0007_snapshot_lz4").server_has_lz4(connection)
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SET LOCAL default_toast_compression = lz4")  # refused by a build without it
        accepted = True
    except DatabaseError:
        accepted = False
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT attcompression FROM pg_attribute WHERE attrelid = 'analysis_jobs_documentchunk'::regclass "
            "AND attname = 'text'"
        )
        compression = cursor.fetchone()[0]
    assert offered == accepted
    assert compression == ("l" if accepted else "")
