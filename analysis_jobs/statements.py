"""
The SQL of a job's hot path, written out: the claim, the seal and the completion that every job costs.

They run once per job, so they are plain statements with named parameters, composed once at import, rather than
querysets that the ORM would build and compile again on every call (which cost more than the round trip to the
server did). Their guards are the ones ``control_plane.py`` describes, spelled here in SQL; the colder writes
spell the same guards with the ORM, and the same behavioural tests exercise both on both engines. The claim is
PostgreSQL's (SQLite claims through the ORM, inside a write transaction); the seal's halves and the completion
are portable, and PostgreSQL runs the seal's two updates as one statement. ``insert_queued`` is bulk enqueue's
insert on PostgreSQL, written out for the same reason: it runs for every job a long list of sources queues.

On PostgreSQL they run on a cursor that binds parameters on the server, so psycopg prepares each of them once per
connection (after ``prepare_threshold`` uses; the project's settings make that 5) and the server stops parsing
and planning them. A connection whose ``OPTIONS`` set ``prepare_threshold`` to None (for a pooler that cannot
keep prepared statements) runs them unprepared. The statements that carry data in bulk (the facts cache's, the
document store's, ``insert_queued``) bind on the server too, for the reason ``cursors.py`` gives; every other
query keeps Django's client-side binding.
"""

import datetime as dt

from django.db import connections

from .cursors import server_binding
from .models import SEALED_STAGE, AnalysisJob, AnalysisSnapshot, SnapshotChunk

JOBS = AnalysisJob._meta.db_table
SNAPSHOTS = AnalysisSnapshot._meta.db_table
PARTS = SnapshotChunk._meta.db_table

# Ownership, as every write of the owner proves it: this attempt of this job is running under this worker.
OWNED = "id = %(job_id)s AND status = 'running' AND worker_id = %(worker_id)s AND attempt = %(attempt)s"

# Claim the oldest eligible job, open its building snapshot and say whether any lease has lapsed (PostgreSQL).
# ``candidate`` reads the oldest eligible job (off the claim index) with FOR UPDATE SKIP LOCKED, so concurrent
# workers take different jobs; locking re-checks its filter against the newest row version, so the status='queued'
# guard there is what decides. ``claimed`` is the compare-and-swap, with the same guard and the attempt the read
# saw (the row is locked by then, so it holds; it keeps the statement correct on its own). The snapshot is
# inserted first so that the claim can point the job at it. One row comes back even when nothing is eligible, so
# the lapsed-lease check always reports. Parameters: now, expires, worker_id.
CLAIM_NEXT = f"""
    WITH candidate AS (
        SELECT id, attempt, source, revision, "commit" FROM {JOBS}
        WHERE status = 'queued' AND attempt < max_attempts
          AND (next_attempt_at IS NULL OR next_attempt_at <= %(now)s)
        ORDER BY created_at, id LIMIT 1
        FOR UPDATE SKIP LOCKED
    ), snapshot AS (
        -- the columns as AnalysisSnapshot's defaults leave a building one
        INSERT INTO {SNAPSHOTS} (state, size, content_hash, identity, failure_code, created_at)
        SELECT 'building', 0, '', '', '', %(now)s FROM candidate
        RETURNING id
    ), claimed AS (
        UPDATE {JOBS} AS job SET status = 'running', worker_id = %(worker_id)s, lease_expires_at = %(expires)s,
            attempt = job.attempt + 1, next_attempt_at = NULL, started_at = %(now)s, updated_at = %(now)s,
            stage = '', progress = 0, snapshot_id = (SELECT id FROM snapshot)
        WHERE job.id = (SELECT id FROM candidate) AND job.status = 'queued'
          AND job.attempt = (SELECT attempt FROM candidate)
        RETURNING job.attempt, job.snapshot_id
    )
    SELECT candidate.id, candidate.attempt, claimed.attempt, claimed.snapshot_id,
           candidate.source, candidate.revision, candidate."commit",
           EXISTS (
               SELECT 1 FROM {JOBS} WHERE status = 'running' AND lease_expires_at < %(now)s
               ORDER BY lease_expires_at LIMIT 1
           )
    FROM (SELECT 1) AS poll LEFT JOIN candidate ON true LEFT JOIN claimed ON true
"""

# The seal's first half: move the owned, uncancelled job to the sealed stage, if snapshot_id is its snapshot and
# still building. Parameters: the owner's (job_id, worker_id, attempt), snapshot_id, expires, now.
SEAL_JOB = f"""
    UPDATE {JOBS} SET stage = '{SEALED_STAGE}', lease_expires_at = %(expires)s, updated_at = %(now)s
    WHERE {OWNED} AND NOT cancel_requested AND snapshot_id = %(snapshot_id)s
      AND EXISTS (SELECT 1 FROM {SNAPSHOTS} WHERE id = %(snapshot_id)s AND state = 'building')
"""


def _seal_snapshot(snapshot_id: str, summary: str) -> str:
    return f"""
        UPDATE {SNAPSHOTS} SET state = 'sealed', size = %(size)s, content_hash = %(content_hash)s,
            identity = %(identity)s, sealed_at = %(now)s, summary = {summary}
        WHERE id = {snapshot_id} AND state = 'building'
    """


# The seal's second half: seal building snapshot snapshot_id (size, content_hash, identity, summary as JSON text,
# now). Its document's list of chunks is written in the same transaction (``DocumentStore.put_list``).
SEAL_SNAPSHOT = _seal_snapshot("%(snapshot_id)s", "%(summary)s")

# Both halves as one statement (PostgreSQL), with the document's list of chunks, the snapshot sealed only if the
# job's guard held. Only the job's owner writes its building snapshot, so once the guard has held (and the job's
# row is locked) the snapshot is still building and the second update matches too: both rows change or neither
# does, and the list is written only with them. ``digests`` lists the document's chunks in order; the chunks
# themselves were stored before, by the owner (``OWNS``). Returns the snapshot's id.
SEAL = f"""
    WITH job AS ({SEAL_JOB} RETURNING snapshot_id),
    snapshot AS ({_seal_snapshot("(SELECT snapshot_id FROM job)", "%(summary)s::jsonb")} RETURNING id),
    part AS (
        INSERT INTO {PARTS} (snapshot_id, position, chunk_id)
        SELECT snapshot.id, part.position - 1, part.digest
        FROM snapshot, unnest(%(digests)s::text[]) WITH ORDINALITY AS part (digest, position)
    )
    SELECT id FROM snapshot
"""

# The condition under which the owner may store its document's chunks before the seal: it still owns the job,
# and no cancellation was accepted (the seal would be refused). Parameters: the owner's.
OWNS = f"EXISTS (SELECT 1 FROM {JOBS} WHERE {OWNED} AND NOT cancel_requested)"

# Complete the owned job whose snapshot was sealed under this lease (commit two of two). Parameters: the
# owner's, now. No cancellation guard: a sealed snapshot wins over a cancellation that came after it.
COMPLETE = f"""
    UPDATE {JOBS} SET status = 'completed', stage = 'done', progress = 100, lease_expires_at = NULL,
        completed_at = %(now)s, updated_at = %(now)s, error_code = '', error_message = ''
    WHERE {OWNED} AND stage = '{SEALED_STAGE}'
"""


def execute(using: str, sql: str, params: dict) -> tuple[int, tuple | None]:
    """Run one of these statements on database ``using``; return the rows it wrote and its first row (or None)."""
    connection = connections[using]
    # Datetimes as the ORM stores them: SQLite keeps them as text in UTC, and the guards compare that text.
    adapt = connection.ops.adapt_datetimefield_value
    params = {name: adapt(value) if isinstance(value, dt.datetime) else value for name, value in params.items()}
    with server_binding(connection) as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount, cursor.fetchone() if cursor.description else None


def insert_queued(using: str, template: AnalysisJob, sources: list[str], commits: list[str]) -> list[AnalysisJob]:
    """Insert a queued job for each of ``sources`` at its commit in ``commits``, each like ``template`` otherwise;
    return them (PostgreSQL).

    One statement whatever the count: the columns that all the jobs share are bound once, and the sources and
    their commits as two arrays, where ``bulk_create`` would prepare every field of every row. For 10,000 sources
    that was most of ``enqueue_analysis``'s time. Raises ``IntegrityError`` if a source already has an active job.
    """
    connection = connections[using]
    per_row = {"source": sources, "commit": commits}
    fields = [field for field in AnalysisJob._meta.concrete_fields if not field.primary_key]
    columns = ", ".join(connection.ops.quote_name(field.column) for field in fields)
    # Unnests side by side in a select list are zipped, row by row (PostgreSQL 10 and later).
    values = ", ".join(
        "unnest(%s::text[])" if field.attname in per_row else f"%s::{field.db_type(connection)}" for field in fields
    )
    params = [
        per_row[field.attname] if field.attname in per_row else field.get_db_prep_save(getattr(template, field.attname), connection)
        for field in fields
    ]
    with server_binding(connection) as cursor:  # the sources are data, not statement text (cursors.py)
        cursor.execute(f"INSERT INTO {JOBS} ({columns}) SELECT {values} RETURNING id, source", params)
        ids = {source: pk for pk, source in cursor.fetchall()}
    # The rows as the database now holds them, built as a query's results are (from_db), not field by field.
    names = [field.attname for field in AnalysisJob._meta.concrete_fields]
    row = [getattr(template, name) for name in names]
    pk_at, source_at, commit_at = (names.index(name) for name in (AnalysisJob._meta.pk.attname, "source", "commit"))
    jobs = []
    for source, commit in zip(sources, commits):
        row[pk_at], row[source_at], row[commit_at] = ids[source], source, commit
        jobs.append(AnalysisJob.from_db(using, names, row))
    return jobs
