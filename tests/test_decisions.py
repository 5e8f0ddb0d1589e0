"""The pure retry policy: what a failed or stale attempt leads to, without a database."""

import datetime as dt

from analysis_jobs.decisions import Fail, Requeue, backoff_seconds, decide_failure, decide_stale
from analysis_jobs.exceptions import SourceNotFound

NOW = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def test_backoff_doubles_from_the_base_and_stops_at_the_cap():
    delays = [backoff_seconds(attempt, base=2, cap=60, jitter=0.9999999) for attempt in range(1, 8)]
    assert [round(d) for d in delays] == [2, 4, 8, 16, 32, 60, 60]


def test_jitter_spreads_a_delay_over_its_upper_half():
    assert backoff_seconds(3, base=2, cap=60, jitter=0) == 4
    assert backoff_seconds(3, base=2, cap=60, jitter=0.5) == 6


def test_a_retryable_error_with_attempts_left_is_requeued_after_the_backoff():
    decision = decide_failure(attempt=1, max_attempts=3, error=ValueError("boom"), now=NOW, base=2, cap=60, jitter=0)
    assert decision == Requeue(at=NOW + dt.timedelta(seconds=1), code="RI-JOB-FAILED", message="ValueError: boom")


def test_the_last_attempt_fails_with_the_message():
    decision = decide_failure(attempt=3, max_attempts=3, error=ValueError("boom"), now=NOW, base=2, cap=60, jitter=0)
    assert isinstance(decision, Fail)
    assert decision.code == "RI-JOB-FAILED"
    assert "ValueError: boom" in decision.message and "no attempts left" in decision.message


def test_a_non_retryable_error_fails_at_once_with_its_own_code():
    decision = decide_failure(attempt=1, max_attempts=3, error=SourceNotFound("gone"), now=NOW, base=2, cap=60, jitter=0)
    assert decision == Fail(code="RI-SOURCE-NOT-FOUND", message="gone")


def test_a_stale_attempt_is_requeued_as_stale_and_quarantined_at_the_limit():
    requeue = decide_stale(attempt=1, max_attempts=2, now=NOW, base=2, cap=60, jitter=0)
    assert isinstance(requeue, Requeue) and requeue.code == "RI-JOB-STALE"
    fail = decide_stale(attempt=2, max_attempts=2, now=NOW, base=2, cap=60, jitter=0)
    assert isinstance(fail, Fail) and fail.code == "RI-JOB-STALE"
