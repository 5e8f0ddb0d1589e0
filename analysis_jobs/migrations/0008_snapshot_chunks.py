# Sealed documents move from one text column to content-defined chunks shared between snapshots (see
# analysis_jobs/documents.py): a re-analysis then writes the few chunks that changed, not a whole copy. The
# documents sealed before are cut into chunks here, byte for byte, and the column goes. Chunk text is
# compressed with lz4 where the server offers it, as the column was (0007).

from importlib import import_module

import django.db.models.deletion
from django.db import migrations, models

lz4 = import_module("analysis_jobs.migrations.0007_snapshot_lz4")
TABLE = "analysis_jobs_documentchunk"


def compress_with_lz4(apps, schema_editor):
    if lz4.server_has_lz4(schema_editor.connection):
        schema_editor.execute(f"ALTER TABLE {TABLE} ALTER COLUMN text SET COMPRESSION lz4")


def cut_sealed_documents(apps, schema_editor):
    import datetime as dt
    import json

    from analysis_jobs.documents import DocumentStore, cut

    store = DocumentStore(schema_editor.connection.alias)
    snapshots = apps.get_model("analysis_jobs", "AnalysisSnapshot").objects.using(schema_editor.connection.alias)
    now = dt.datetime.now(dt.UTC)
    for pk, facts in snapshots.exclude(facts="").values_list("pk", "facts").iterator(chunk_size=20):
        chunks = cut(facts)
        store.put_chunks(chunks, now)
        store.put_list(pk, tuple(chunk.digest for chunk in chunks))
        document = json.loads(facts)
        summary = document.get("summary") if isinstance(document, dict) else None
        snapshots.filter(pk=pk).update(size=len(facts.encode()), summary=summary)


def join_sealed_documents(apps, schema_editor):
    from analysis_jobs.documents import DocumentStore

    store = DocumentStore(schema_editor.connection.alias)
    snapshots = apps.get_model("analysis_jobs", "AnalysisSnapshot").objects.using(schema_editor.connection.alias)
    for pk in snapshots.filter(size__gt=0).values_list("pk", flat=True).iterator():
        snapshots.filter(pk=pk).update(facts=store.read(pk))


class Migration(migrations.Migration):

    dependencies = [
        ('analysis_jobs', '0007_snapshot_lz4'),
    ]

    operations = [
        migrations.CreateModel(
            name='DocumentChunk',
            fields=[
                ('digest', models.CharField(help_text="SHA-256 of the text's UTF-8 bytes.", max_length=64, primary_key=True, serialize=False)),
                ('text', models.TextField()),
                ('recorded_at', models.DateTimeField(help_text='When an analysis last stored the chunk.')),
            ],
        ),
        migrations.AddField(
            model_name='analysissnapshot',
            name='size',
            field=models.PositiveBigIntegerField(default=0, help_text="Bytes of the sealed document's UTF-8 text."),
        ),
        migrations.AddField(
            model_name='analysissnapshot',
            name='summary',
            field=models.JSONField(blank=True, null=True),
        ),
        migrations.CreateModel(
            name='SnapshotChunk',
            fields=[
                ('pk', models.CompositePrimaryKey('snapshot', 'position', blank=True, editable=False, primary_key=True, serialize=False)),
                ('position', models.PositiveIntegerField()),
                ('chunk', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='+', to='analysis_jobs.documentchunk')),
                ('snapshot', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='chunks', to='analysis_jobs.analysissnapshot')),
            ],
        ),
        migrations.RunPython(cut_sealed_documents, join_sealed_documents, elidable=False),
        migrations.RemoveField(
            model_name='analysissnapshot',
            name='facts',
        ),
        migrations.RunPython(compress_with_lz4, migrations.RunPython.noop, elidable=False),
    ]
