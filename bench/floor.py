"""
The floor: the least a database queue can do per job, as a plain psycopg loop on the same table.

Per job: read the oldest queued row, claim it with a guarded update, complete it with a guarded update, each in
its own transaction (autocommit), and nothing else: no lease renewal, no snapshot written, no logging. Run as
``python -m bench.floor DSN SNAPSHOT_ID`` until the queue is empty.
"""

import datetime as dt
import os
import sys

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


if __name__ == "__main__":
    print(drain(sys.argv[1], int(sys.argv[2])))
