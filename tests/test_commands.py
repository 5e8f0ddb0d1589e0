"""The commands as a user runs them: what they print, what they change, and their exit codes."""

import json
import logging
import os
import subprocess
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from analysis_jobs.models import AnalysisJob, JobStatus

JSON_FIELDS = {"id", "status", "stage", "progress", "attempt", "max_attempts", "error_code", "error_message", "snapshot_hash"}


def run(*args):
    out, err = StringIO(), StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_enqueue_prints_the_job_id_and_queues_the_real_path(db, source_dir):
    out, _ = run("enqueue_analysis", str(source_dir), "--max-attempts", "5")
    job = AnalysisJob.objects.get()
    assert out.strip() == str(job.pk)
    assert (job.source, job.status, job.max_attempts) == (str(source_dir.resolve()), JobStatus.QUEUED, 5)


def test_enqueueing_an_active_source_again_returns_the_same_job(db, source_dir):
    first, _ = run("enqueue_analysis", str(source_dir))
    again, err = run("enqueue_analysis", str(source_dir))
    assert first == again and AnalysisJob.objects.count() == 1
    assert "already has an active job" in err


def test_enqueue_json_has_the_public_fields(db, source_dir):
    out, _ = run("enqueue_analysis", str(source_dir), "--json")
    record = json.loads(out)
    assert JSON_FIELDS <= record.keys()
    assert record["status"] == "queued" and record["snapshot_hash"] is None


def test_status_shows_named_jobs_and_refuses_an_unknown_id(db, source_dir):
    job_id = int(run("enqueue_analysis", str(source_dir))[0])
    out, _ = run("analysis_status", str(job_id), "--json")
    assert json.loads(out)["id"] == job_id
    with pytest.raises(CommandError, match="No job with id 999"):
        run("analysis_status", str(job_id), "999")


def test_cancel_cancels_a_queued_job_asks_a_running_one_and_refuses_a_finished_one(db, control_plane, make_job):
    queued = make_job()
    running = make_job()
    control_plane.claim(running.pk, "w1")
    out, _ = run("cancel_analysis", str(queued.pk), str(running.pk))
    assert f"job {queued.pk}: cancelled" in out and f"job {running.pk}: cancellation requested" in out
    assert AnalysisJob.objects.get(pk=queued.pk).status == JobStatus.CANCELLED
    assert AnalysisJob.objects.get(pk=running.pk).cancel_requested
    with pytest.raises(CommandError, match="already cancelled"):
        run("cancel_analysis", str(queued.pk))


def test_a_command_people_read_logs_only_warnings_unless_asked_for_more(db, source_dir, caplog):
    logger = logging.getLogger("analysis_jobs")
    with caplog.at_level(logging.INFO, logger="analysis_jobs"):
        job_id = run("enqueue_analysis", str(source_dir))[0].strip()
        assert caplog.messages == []  # the job id it printed says it all
        assert logger.level == logging.INFO  # as it was before the command
        out, _ = run("cancel_analysis", job_id, "--verbosity", "2")
    assert out == f"job {job_id}: cancelled\n"
    assert caplog.messages == [f"job id={job_id} event=cancelled by=cancel_analysis"]


@pytest.mark.process
def test_a_source_the_terminal_cannot_spell_is_shown_escaped(worker_env, manage_py, tmp_path):
    source = tmp_path / "\u65e5\u672c"
    source.mkdir()
    run("enqueue_analysis", str(source))
    env = dict(worker_env, PYTHONIOENCODING="latin-1")
    status = subprocess.run([*manage_py, "analysis_status"], env=env, capture_output=True, text=True, encoding="latin-1")
    assert status.returncode == 0, status.stderr
    assert "source=" + str(tmp_path) + "/\\u65e5\\u672c" in status.stdout


@pytest.mark.process
def test_a_command_whose_reader_has_gone_stops_quietly_with_a_failing_status(worker_env, manage_py, source_dir):
    run("enqueue_analysis", str(source_dir))
    read, write = os.pipe()
    os.close(read)  # as `analysis_status | head -1` is once head has its line: every write now fails
    try:
        status = subprocess.run([*manage_py, "analysis_status"], env=worker_env, stdout=write, stderr=subprocess.PIPE, text=True)
    finally:
        os.close(write)
    assert (status.returncode, status.stderr) == (1, "")


@pytest.mark.process
def test_wait_follows_a_job_that_a_worker_completes_and_exits_zero(worker_env, manage_py, source_dir):
    waiter = subprocess.Popen([*manage_py, "enqueue_analysis", str(source_dir), "--wait", "--json"], env=worker_env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    worker = subprocess.run([*manage_py, "runworker", "--max-jobs", "1", "--poll-interval", "0.1"], env=worker_env,
                            capture_output=True, text=True, timeout=120)
    out, err = waiter.communicate(timeout=120)
    assert worker.returncode == 0, worker.stderr
    assert waiter.returncode == 0, err
    record = json.loads(out)
    assert record["status"] == "completed" and len(record["snapshot_hash"]) == 64


@pytest.mark.process
def test_a_source_gone_before_the_worker_reaches_it_fails_once_with_source_not_found(worker_env, manage_py, tmp_path):
    source = tmp_path / "vanishing"
    source.mkdir()
    queued = subprocess.run([*manage_py, "enqueue_analysis", str(source)], env=worker_env, capture_output=True, text=True)
    source.rmdir()  # gone before any worker reaches it: a non-retryable failure
    subprocess.run([*manage_py, "runworker", "--burst"], env=worker_env, capture_output=True, timeout=120, check=True)
    job_id = queued.stdout.strip()
    status = subprocess.run([*manage_py, "analysis_status", job_id, "--json"], env=worker_env, capture_output=True, text=True)
    assert json.loads(status.stdout)["error_code"] == "RI-SOURCE-NOT-FOUND"


@pytest.mark.process
def test_runworker_concurrency_drains_the_queue_with_every_job_completed_once(worker_env, manage_py, tmp_path):
    paths = []
    for index in range(40):
        directory = tmp_path / f"src{index}"
        directory.mkdir()
        (directory / "main.py").write_text(f"import os\nVALUE = {index}\n")
        paths.append(str(directory))
    subprocess.run([*manage_py, "enqueue_analysis", *paths], env=worker_env, capture_output=True, check=True)
    done = subprocess.run([*manage_py, "runworker", "--burst", "--concurrency", "3"], env=worker_env,
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("started") >= 3  # three worker processes
    jobs = list(AnalysisJob.objects.select_related("snapshot"))
    assert len(jobs) == 40
    assert {(job.status, job.attempt) for job in jobs} == {(JobStatus.COMPLETED, 1)}
    assert len({job.snapshot_id for job in jobs}) == 40
