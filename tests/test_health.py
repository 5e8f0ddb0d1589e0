"""The queue's health and each job's "why isn't it running?", on the real transitions and the fake clock."""

import datetime as dt
import json

import pytest
from django.core.management import CommandError, call_command

from analysis_jobs.health import summary, summary_lines, why_not_running
from analysis_jobs.management.commands import analysis_status
from analysis_jobs.models import AnalysisJob, JobStatus

LEASE = 30


def fresh(job):
    return AnalysisJob.objects.get(pk=job.pk)


def test_a_queued_job_waits_behind_the_older_eligible_ones_and_says_no_worker_claims(db, make_job, fake_clock):
    older = [make_job(), make_job()]
    make_job(next_attempt_at=fake_clock.now() + dt.timedelta(minutes=5))  # in backoff: not ahead of anyone
    fake_clock.advance(90)
    job = make_job()
    why = why_not_running(job, fake_clock.now())
    assert why.startswith("Waiting behind 2 older eligible jobs (0 of 3 attempts spent).")
    assert "No worker holds a live lease and the oldest eligible job has waited 90 s" in why
    assert older  # the two jobs the count is of


def test_a_queued_job_with_a_worker_busy_elsewhere_only_waits(db, control_plane, make_job, fake_clock):
    busy = make_job()
    control_plane.claim(busy.pk, "w1")
    job = make_job()
    assert why_not_running(job, fake_clock.now()) == "Waiting behind 0 older eligible jobs (0 of 3 attempts spent)."


def test_a_job_in_backoff_says_until_when_and_after_what(db, make_job, fake_clock):
    until = fake_clock.now() + dt.timedelta(seconds=40)
    job = make_job(attempt=1, next_attempt_at=until, error_code="RI-JOB-FAILED")
    assert why_not_running(job, fake_clock.now()) == f"In backoff until {until.isoformat(timespec='seconds')} after RI-JOB-FAILED (1 of 3 attempts spent)."


def test_a_running_job_names_its_worker_stage_and_lease(db, control_plane, make_job, fake_clock):
    job = make_job()
    lease = control_plane.claim(job.pk, "w1")
    control_plane.renew(lease, stage="extract", progress=40)
    job = fresh(job)
    until = job.lease_expires_at.isoformat(timespec="seconds")
    assert why_not_running(job, fake_clock.now()) == f"Running on worker w1, stage extract (40%), lease until {until} (1 of 3 attempts spent)."


def test_a_cancel_waits_for_the_workers_next_renewal_at_most_the_lease(db, control_plane, make_job, fake_clock):
    job = make_job()
    control_plane.claim(job.pk, "w1")
    control_plane.request_cancel(job.pk, by="test")
    job = fresh(job)
    assert why_not_running(job, fake_clock.now()) == (
        f"Cancel requested: worker w1 stops at its next renewal, at the latest when its lease ends at "
        f"{job.lease_expires_at.isoformat(timespec='seconds')}."
    )


def test_a_job_whose_worker_stopped_renewing_says_the_sweep_takes_it_back(db, control_plane, make_job, fake_clock):
    job = make_job()
    control_plane.claim(job.pk, "w1")
    fake_clock.advance(LEASE + 15)
    why = why_not_running(fresh(job), fake_clock.now())
    assert why.startswith("Its worker w1 stopped renewing: the lease lapsed at ") and ", 15 s ago," in why


@pytest.mark.parametrize(("status", "fields", "start"), [
    (JobStatus.CANCELLED, {}, "Cancelled at "),
    (JobStatus.FAILED, {"error_code": "RI-SOURCE-NOT-FOUND", "error_message": "gone", "attempt": 1}, "Failed with RI-SOURCE-NOT-FOUND at "),
])
def test_a_finished_job_says_how_it_ended(db, make_job, fake_clock, status, fields, start):
    job = make_job(status=status, completed_at=fake_clock.now(), **fields)
    assert why_not_running(job, fake_clock.now()).startswith(start)


def test_the_summary_counts_ages_backoff_running_failures_and_workers(db, control_plane, make_job, fake_clock):
    now = fake_clock.now()
    make_job(created_at=now - dt.timedelta(seconds=120), updated_at=now)
    make_job(attempt=1, next_attempt_at=now + dt.timedelta(seconds=30), error_code="RI-JOB-STALE")
    alive, gone = make_job(), make_job()
    control_plane.claim(gone.pk, "w-gone")
    fake_clock.advance(LEASE + 1)
    control_plane.claim(alive.pk, "w-alive")
    make_job(status=JobStatus.FAILED, completed_at=fake_clock.now(), error_code="RI-JOB-FAILED", attempt=1)
    make_job(status=JobStatus.FAILED, completed_at=fake_clock.now() - dt.timedelta(hours=2), error_code="RI-JOB-STALE", attempt=1)
    health = summary(fake_clock.now())
    assert health["jobs"] == {"queued": 2, "running": 2, "completed": 0, "failed": 2, "cancelled": 0}
    assert health["oldest_queued_seconds"] == 120 + LEASE + 1
    assert health["backoff"] == {"jobs": 0, "next_eligible_at": None}  # its 30 s passed while the clock moved
    assert [(row["id"], row["worker_id"]) for row in health["running"]] == [(gone.pk, "w-gone"), (alive.pk, "w-alive")]
    assert health["running"][0]["lease_remaining_seconds"] == -1
    assert health["failures_last_hour"] == {"RI-JOB-FAILED": 1}
    assert health["workers"] == [
        {"worker_id": "w-alive", "jobs": 1, "state": "alive"}, {"worker_id": "w-gone", "jobs": 1, "state": "gone"},
    ]
    lines = "\n".join(summary_lines(health))
    assert "lease lapsed 1 s ago" in lines and "w-gone (gone, 1 job(s))" in lines


def test_the_summary_reports_backoff_with_the_next_eligible_time(db, make_job, fake_clock):
    soon = fake_clock.now() + dt.timedelta(seconds=30)
    make_job(attempt=1, next_attempt_at=soon, error_code="RI-JOB-STALE")
    make_job(attempt=1, next_attempt_at=soon + dt.timedelta(seconds=30), error_code="RI-JOB-STALE")
    health = summary(fake_clock.now())
    assert health["backoff"] == {"jobs": 2, "next_eligible_at": soon.isoformat(timespec="seconds")}
    assert health["oldest_queued_seconds"] is None


def test_the_status_command_prints_why_and_the_summary(db, make_job, fake_clock, monkeypatch, capsys):
    monkeypatch.setattr(analysis_status.Command, "clock", fake_clock)
    job = make_job()
    call_command("analysis_status", str(job.pk), "--json")
    assert json.loads(capsys.readouterr().out)["why"].startswith("Waiting behind 0 older eligible jobs")
    call_command("analysis_status", "--summary", "--json")
    assert json.loads(capsys.readouterr().out)["jobs"]["queued"] == 1
    call_command("analysis_status", "--summary")
    assert capsys.readouterr().out.startswith("jobs      queued 1  running 0")
    with pytest.raises(CommandError, match="give it no JOB_ID"):
        call_command("analysis_status", "--summary", str(job.pk))
