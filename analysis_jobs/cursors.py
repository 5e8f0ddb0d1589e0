"""
Cursors that bind parameters on the server, for the statements that carry data in bulk or run on every job.

Django's PostgreSQL cursor binds parameters on the client: it writes them into the SQL text. psycopg counts each
distinct text a connection runs, to prepare those it sees ``prepare_threshold`` times, and keeps the last 100 it
counted, text and all, for as long as the connection lives. A statement whose text holds a batch of facts or
document chunks is seen once and never prepared, yet it was kept: a 25,000-file analysis left about 250 MB of
such texts in the worker (457 MiB peak on PostgreSQL, 197 on SQLite). Bound on the server, a statement's text is
its template alone, whatever it carries: psycopg keeps a few short texts, and prepares those it sees often.
"""

import psycopg


def server_binding(connection):
    """Return a cursor on Django's ``connection`` that binds parameters on the server (PostgreSQL), or its usual one.

    It is what ``connection.cursor()`` returns, with psycopg's server-binding cursor in place of Django's client
    one: health-checked, its errors wrapped as Django's, and logged when queries are.
    """
    if connection.vendor != "postgresql":
        return connection.cursor()
    connection.close_if_health_check_failed()
    connection.ensure_connection()
    with connection.wrap_database_errors:
        cursor = psycopg.Cursor(connection.connection)
    connection.validate_thread_sharing()
    return connection.make_debug_cursor(cursor) if connection.queries_logged else connection.make_cursor(cursor)
