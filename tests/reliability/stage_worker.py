"""
Run ``manage.py runworker`` with one test stage put in front of the pipeline's own stages.

``PARTHA_TEST_STAGE`` says which: ``hold`` keeps the first job of this process in its stage (checking between
short naps, as a long stage does) until the stage's ``check()`` raises, so a test can pause the process
mid-job; ``cpu:SECONDS`` burns the CPU in pure Python for that long on every job, with a long GIL switch
interval so the heartbeat thread is starved as far as a busy stage can starve it.
"""

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "partha.settings")

import django  # noqa: E402

django.setup()

from django.core.management import execute_from_command_line  # noqa: E402

from analysis_jobs import worker as worker_module  # noqa: E402
from analysis_jobs.pipeline import Stage, default_pipeline  # noqa: E402

MODE = os.environ["PARTHA_TEST_STAGE"]
held = []


def hold(state, check):
    if held:
        return
    held.append(state.source)
    while True:
        check()
        time.sleep(0.02)


def burn(state, check):
    seconds = float(MODE.split(":", 1)[1])
    end = time.monotonic() + seconds
    total = 0
    while time.monotonic() < end:
        for i in range(20000):
            total += i * i
        check()


class WithTestStage:
    def __init__(self, inner):
        self.inner = inner
        stage = Stage("test-hold", hold) if MODE == "hold" else Stage("test-cpu", burn)
        self.stages = (stage, *inner.stages)

    def document(self, state):
        return self.inner.document(state)

    def summary(self, state):
        return self.inner.summary(state)

    def identity(self, state):
        return self.inner.identity(state)


if MODE.startswith("cpu:"):
    sys.setswitchinterval(0.05)
worker_module.default_pipeline = lambda: WithTestStage(default_pipeline())
execute_from_command_line(["manage.py", "runworker", *sys.argv[1:]])
