"""
The floor: the least a database queue can do per job, as a plain psycopg loop on the same table.

Per job: read the oldest queued row, claim it with a guarded update, complete it with a guarded update, each in
its own transaction (autocommit), and nothing else: no lease renewal, no snapshot written, no logging. Run as
``python -m bench.floor DSN SNAPSHOT_ID`` until the queue is empty.

``--chained`` is the least a queue can do at all: one statement per job, which completes the job in hand and
claims the next (``FOR UPDATE SKIP LOCKED``) in the same transaction. It shows what the machine allows as workers
are added, whatever the design.
"""

import argparse
import datetime as dt
import os

import psycopg

TABLE = "analysis_jobs_analysisjob"


def drain(dsn: str, snapshot_id: int) -> int:
    worker = f"floor:{os.getpid()}"
    done = 0
    with psycopg.connect(dsn, autocommit=True) as conn:
        while True:
            row = conn.execute(
                f"SELECT id, attempt FROM {TABLE} WHERE status = 'queued' ORDER BY created_at, id LIMIT 1"
            ).fetchone()
            if row is None:
                return done
            now = dt.datetime.now(dt.UTC)
            claimed = conn.execute(
                f"UPDATE {TABLE} SET status = 'running', worker_id = %s, attempt = attempt + 1, lease_expires_at = %s,"
                " started_at = %s, updated_at = %s WHERE id = %s AND status = 'queued' AND attempt = %s",
                (worker, now + dt.timedelta(seconds=30), now, now, row[0], row[1]),
            ).rowcount
            if claimed != 1:
                continue
            now = dt.datetime.now(dt.UTC)
            conn.execute(
                f"UPDATE {TABLE} SET status = 'completed', stage = 'done', progress = 100, lease_expires_at = NULL,"
                " snapshot_id = %s, completed_at = %s, updated_at = %s"
                " WHERE id = %s AND status = 'running' AND worker_id = %s AND attempt = %s",
                (snapshot_id, now, now, row[0], worker, row[1] + 1),
            )
            done += 1


CLAIM_NEXT = (
    f"UPDATE {TABLE} SET status = 'running', worker_id = %(worker)s, attempt = attempt + 1, lease_expires_at = %(lease)s,"
    " started_at = %(now)s, updated_at = %(now)s"
    f" WHERE id = (SELECT id FROM {TABLE} WHERE status = 'queued' ORDER BY created_at, id LIMIT 1 FOR UPDATE SKIP LOCKED)"
    " AND status = 'queued' RETURNING id, attempt"
)
COMPLETE_AND_CLAIM_NEXT = (
    f"WITH completed AS (UPDATE {TABLE} SET status = 'completed', stage = 'done', progress = 100, lease_expires_at = NULL,"
    " snapshot_id = %(snapshot)s, completed_at = %(now)s, updated_at = %(now)s"
    " WHERE id = %(id)s AND status = 'running' AND worker_id = %(worker)s AND attempt = %(attempt)s) "
    + CLAIM_NEXT
)


def drain_chained(dsn: str, snapshot_id: int) -> int:
    worker = f"floor:{os.getpid()}"
    done = 0
    with psycopg.connect(dsn, autocommit=True) as conn:
        now = dt.datetime.now(dt.UTC)
        row = conn.execute(CLAIM_NEXT, {"worker": worker, "lease": now + dt.timedelta(seconds=30), "now": now}).fetchone()
        while row is not None:
            now = dt.datetime.now(dt.UTC)
            row = conn.execute(COMPLETE_AND_CLAIM_NEXT, {
                "snapshot": snapshot_id, "id": row[0], "attempt": row[1], "worker": worker,
                "lease": now + dt.timedelta(seconds=30), "now": now,
            }).fetchone()
            done += 1
    return done


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m bench.floor", description="Drain the queue as the floor; print the jobs done.")
    parser.add_argument("dsn", help="The PostgreSQL connection string.")
    parser.add_argument("snapshot_id", type=int, help="The sealed snapshot every completed job points at.")
    parser.add_argument("--chained", action="store_true", help="One statement per job: complete it and claim the next.")
    args = parser.parse_args()
    print((drain_chained if args.chained else drain)(args.dsn, args.snapshot_id))
