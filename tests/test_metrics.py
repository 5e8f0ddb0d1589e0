"""Prometheus metrics: the worker's counters at each transition, the queue's gauges from the database, the
web endpoint (off unless enabled) and a worker serving its own."""

import datetime as dt
import signal
import socket
import subprocess
import time
import urllib.request

import pytest
from django.test import Client

from analysis_jobs import metrics
from analysis_jobs.decisions import Fail
from tests.documents_support import stored_document


def value(name, **labels):
    return metrics.WORKER.get_sample_value(name, labels) or 0.0


def test_each_transition_counts_once(db, control_plane, make_job, fake_clock):
    before = {name: value(name) for name in ("analysis_claims_total", "analysis_completions_total", "analysis_reclaims_total", "analysis_fenced_writes_refused_total")}
    failed_before = value("analysis_failures_total", code="RI-JOB-FAILED")
    done = make_job()
    lease = control_plane.claim(done.pk, "w1")
    assert control_plane.seal(lease, snapshot_id=control_plane.begin_snapshot(lease), document=stored_document("{}"))
    assert control_plane.complete(lease)
    control_plane.apply_failure(control_plane.claim(make_job().pk, "w1"), Fail("RI-JOB-FAILED", "boom"))
    stale = make_job()
    old = control_plane.claim(stale.pk, "w-dead")
    fake_clock.advance(31)
    (expired,) = control_plane.expired_leases()
    assert control_plane.reclaim(expired, "w2") is not None
    assert control_plane.renew(old).lost  # the dead worker's late write is refused
    assert value("analysis_claims_total") - before["analysis_claims_total"] == 3
    assert value("analysis_completions_total") - before["analysis_completions_total"] == 1
    assert value("analysis_failures_total", code="RI-JOB-FAILED") - failed_before == 1
    assert value("analysis_reclaims_total") - before["analysis_reclaims_total"] == 1
    assert value("analysis_fenced_writes_refused_total") - before["analysis_fenced_writes_refused_total"] == 1


def test_cancellation_latency_runs_from_the_first_request_to_the_end(db, control_plane, make_job, fake_clock):
    before_count, before_sum = value("analysis_cancellation_latency_seconds_count"), value("analysis_cancellation_latency_seconds_sum")
    job = make_job()
    lease = control_plane.claim(job.pk, "w1")
    control_plane.request_cancel(job.pk)
    fake_clock.advance(3)
    control_plane.request_cancel(job.pk)  # asked again: the first request's time stands
    fake_clock.advance(2)
    assert control_plane.finish_cancelled(lease)
    assert value("analysis_cancellation_latency_seconds_count") - before_count == 1
    assert value("analysis_cancellation_latency_seconds_sum") - before_sum == pytest.approx(5)


def test_the_endpoint_is_off_unless_enabled_and_reports_the_queue(db, settings, make_job, fake_clock, monkeypatch):
    from analysis_jobs import http_api

    assert Client().get("/metrics").status_code == 404
    settings.ANALYSIS_JOBS = dict(settings.ANALYSIS_JOBS, METRICS=True)
    monkeypatch.setattr(http_api, "clock", fake_clock)
    make_job(created_at=fake_clock.now() - dt.timedelta(seconds=40))
    make_job()
    text = Client().get("/metrics").content.decode()
    assert 'analysis_jobs{status="queued"} 2.0' in text and 'analysis_jobs{status="failed"} 0.0' in text
    assert "analysis_oldest_queued_seconds 40.0" in text
    assert "analysis_claims_total" in text


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.process
def test_a_worker_serves_its_counters_on_its_metrics_port(worker_env, manage_py):
    port = free_port()
    worker = subprocess.Popen([*manage_py, "runworker", "--metrics-port", str(port)], env=worker_env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        text, deadline = None, time.monotonic() + 30
        while text is None and time.monotonic() < deadline and worker.poll() is None:
            try:
                text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
            except OSError:
                time.sleep(0.1)  # not listening yet: the readiness of a process we started, not a race
        assert text is not None, worker.stderr.read() if worker.poll() is not None else "no answer"
        assert "analysis_claims_total" in text and "analysis_attempt_duration_seconds_bucket" in text
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(30)


def test_a_bad_metrics_port_is_a_clear_error(db):
    from django.core.management import CommandError, call_command

    with pytest.raises(CommandError, match="not a port"):
        call_command("runworker", "--metrics-port", "70000")
