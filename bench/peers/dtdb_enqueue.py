"""Enqueue N no-op tasks through django-tasks-db's own API: ``python -m bench.peers.dtdb_enqueue N``."""

import sys

import django

if __name__ == "__main__":
    django.setup()
    from bench.peers.dtdb_tasks import enqueue

    enqueue(int(sys.argv[1]))
