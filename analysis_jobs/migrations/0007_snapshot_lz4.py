# A sealed document of a big repository is megabytes of JSON: on PostgreSQL, TOAST's default pglz took 28 ms to
# compress Django's (3.5 MB) into 595 kB, where lz4 takes 8 ms for 642 kB. lz4 is used where the server was built
# with it (most builds of PostgreSQL 14 and later); elsewhere, and on SQLite, nothing changes. Rows stored
# before keep their compression: PostgreSQL reads either.

from django.db import migrations

TABLE = "analysis_jobs_analysissnapshot"


def server_has_lz4(connection) -> bool:
    if connection.vendor != "postgresql":
        return False
    with connection.cursor() as cursor:
        # pg_settings has the row from PostgreSQL 14, the first with a choice; its values are what this build offers.
        cursor.execute("SELECT 'lz4' = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'")
        row = cursor.fetchone()
    return bool(row and row[0])


def compress_with_lz4(apps, schema_editor):
    if server_has_lz4(schema_editor.connection):
        schema_editor.execute(f"ALTER TABLE {TABLE} ALTER COLUMN facts SET COMPRESSION lz4")


def compress_by_default(apps, schema_editor):
    if server_has_lz4(schema_editor.connection):
        schema_editor.execute(f"ALTER TABLE {TABLE} ALTER COLUMN facts SET COMPRESSION default")


class Migration(migrations.Migration):

    dependencies = [
        ('analysis_jobs', '0006_cache_recorded_at'),
    ]

    operations = [
        migrations.RunPython(compress_with_lz4, compress_by_default, elidable=False),
    ]
