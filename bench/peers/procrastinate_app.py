"""The no-op task for procrastinate on ``PROCRASTINATE_DSN``, with the library's default settings."""

import os
import sys

import procrastinate

app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=os.environ.get("PROCRASTINATE_DSN", "")))


@app.task(name="noop")
def noop():
    return None


if __name__ == "__main__":
    with app.open():
        count = int(sys.argv[1])
        for start in range(0, count, 1000):
            noop.batch_defer(*[{} for _ in range(min(1000, count - start))])
