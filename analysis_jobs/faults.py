"""
A test hook that kills the worker process at a named checkpoint, so the fault suite can prove that a crash at
any step leaves a job that the sweep finishes or retries. Off unless ``ANALYSIS_JOBS['FAULT_CHECKPOINT']`` (the
``ANALYSIS_FAULT_CHECKPOINT`` environment variable) names a checkpoint; production never sets it.

Checkpoints: ``after-claim``, ``after-stage:<name>``, ``after-seal`` and ``during-heartbeat``.
"""

import os
import signal

from django.conf import settings


def checkpoint(name: str) -> None:
    """Kill this process with SIGKILL if the fault hook names ``name``."""
    if settings.ANALYSIS_JOBS.get("FAULT_CHECKPOINT") == name:
        os.kill(os.getpid(), signal.SIGKILL)
