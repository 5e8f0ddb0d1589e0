"""The no-op task for procrastinate on ``PROCRASTINATE_DSN``, with the library's default settings."""

import os

import procrastinate

app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=os.environ.get("PROCRASTINATE_DSN", "")))


@app.task(name="noop")
def noop():
    return None

