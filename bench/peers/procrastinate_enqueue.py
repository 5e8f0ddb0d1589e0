"""Defer N no-op jobs through procrastinate's own API: ``python -m bench.peers.procrastinate_enqueue N``."""

import sys

from bench.peers.procrastinate_app import app, noop

if __name__ == "__main__":
    with app.open():
        count = int(sys.argv[1])
        for start in range(0, count, 1000):
            noop.batch_defer(*[{} for _ in range(min(1000, count - start))])
