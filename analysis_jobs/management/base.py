"""The base of the commands a person runs once and reads (all but ``runworker``)."""

import logging

from django.core.management.base import BaseCommand


class OneShotCommand(BaseCommand):
    """A command whose own output says what it did, so the project's INFO log lines would only say it twice.

    Below verbosity 2 the ``analysis_jobs`` loggers pass on only warnings and errors while it runs: queueing
    10,000 paths printed 10,000 lines of log beside the 10,000 job ids. ``-v 2`` shows them all, and a worker,
    whose log is its output, is not one of these.
    """

    def execute(self, *args, **options):
        logger = logging.getLogger("analysis_jobs")
        level = logger.level
        if options.get("verbosity", 1) < 2 and logger.getEffectiveLevel() < logging.WARNING:
            logger.setLevel(logging.WARNING)
        try:
            return super().execute(*args, **options)
        finally:
            logger.setLevel(level)
