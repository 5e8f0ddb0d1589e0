"""
What a failed attempt means, decided without a database: requeue at a time, or fail for good.

The control plane applies a decision; these functions only compute it, so every branch is tested in
``tests/test_decisions.py`` with plain values.
"""

import datetime as dt
import random
from dataclasses import dataclass

from .exceptions import AnalysisError

STALE_CODE = "RI-JOB-STALE"
FAILED_CODE = "RI-JOB-FAILED"


@dataclass(frozen=True, slots=True)
class Requeue:
    at: dt.datetime
    code: str
    message: str


@dataclass(frozen=True, slots=True)
class Fail:
    code: str
    message: str


def backoff_seconds(attempt: int, *, base: float, cap: float, jitter: float) -> float:
    """Return the delay before the attempt after ``attempt``: base doubling per attempt, capped, with jitter.

    ``jitter`` is a number in [0, 1) (a random draw in production); it spreads retries over the upper half of
    the delay so that jobs failing together do not come back together.
    """
    delay = min(cap, base * 2 ** max(0, attempt - 1))
    return delay * (0.5 + jitter / 2)


def decide_failure(
    *,
    attempt: int,
    max_attempts: int,
    error: BaseException,
    now: dt.datetime,
    base: float,
    cap: float,
    jitter: float | None = None,
) -> Requeue | Fail:
    """Decide what an attempt that raised ``error`` leads to."""
    if isinstance(error, AnalysisError):
        code, message, retryable = error.code, error.message, error.retryable
    else:
        code, message, retryable = FAILED_CODE, f"{error.__class__.__name__}: {error}", True
    return _decide(attempt, max_attempts, code, message, retryable, now, base, cap, jitter)


def decide_stale(
    *, attempt: int, max_attempts: int, now: dt.datetime, base: float, cap: float, jitter: float | None = None
) -> Requeue | Fail:
    """Decide what a job whose worker stopped renewing its lease leads to."""
    message = f"The worker stopped renewing its lease during attempt {attempt}."
    return _decide(attempt, max_attempts, STALE_CODE, message, True, now, base, cap, jitter)


def _decide(attempt, max_attempts, code, message, retryable, now, base, cap, jitter):
    if not retryable:
        return Fail(code=code, message=message)
    if attempt >= max_attempts:
        final = FAILED_CODE if code != STALE_CODE else STALE_CODE
        return Fail(code=final, message=f"{message} (attempt {attempt} of {max_attempts}, no attempts left)")
    jitter = random.random() if jitter is None else jitter
    delay = backoff_seconds(attempt, base=base, cap=cap, jitter=jitter)
    return Requeue(at=now + dt.timedelta(seconds=delay), code=code, message=message)
