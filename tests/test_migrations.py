"""The committed migrations describe the models exactly."""

from io import StringIO

from django.core.management import call_command


def test_the_models_have_no_changes_missing_from_the_migrations(db):
    out = StringIO()
    # --check exits non-zero (SystemExit) when a migration is missing, which fails this test.
    call_command("makemigrations", "--check", "--dry-run", stdout=out)
    assert "No changes detected" in out.getvalue()
