"""The admin as an operator uses it, in a real headless browser: cancel, retry, the overview, a refusal."""

import datetime as dt

import pytest
from django.contrib.auth.models import Permission, User

from analysis_jobs.models import AnalysisJob, JobStatus
from tests.browser.conftest import screenshot

pytestmark = pytest.mark.browser


def log_in(page, username, password="pw"):
    page.goto("/admin/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("input[type=submit]")


def run_action(page, label, *jobs):
    page.goto("/admin/analysis_jobs/analysisjob/")
    for job in jobs:
        page.check(f"input[name=_selected_action][value='{job.pk}']")
    page.select_option("select[name=action]", label=label)
    page.click("button[name=index]")


@pytest.fixture
def operator(transactional_db):
    return User.objects.create_superuser("ops", password="pw")


def test_an_operator_cancels_a_queued_job(page, operator, make_job):
    job = make_job(owner=operator)
    log_in(page, "ops")
    run_action(page, "Request cancellation", job)
    assert "Cancellation requested for 1 job(s)" in page.inner_text(".messagelist")
    assert AnalysisJob.objects.get(pk=job.pk).status == JobStatus.CANCELLED
    screenshot(page, "cancelled")


def test_an_operator_retries_a_failed_job(page, operator, make_job):
    failed = make_job(owner=operator, status=JobStatus.FAILED, attempt=1, completed_at=dt.datetime.now(dt.UTC),
                      error_code="RI-JOB-FAILED", error_message="boom")
    log_in(page, "ops")
    run_action(page, "Retry (queue again as a new job)", failed)
    assert "Queued 1 job(s) again" in page.inner_text(".messagelist")
    retried = AnalysisJob.objects.exclude(pk=failed.pk).get()
    assert (retried.source, retried.status) == (failed.source, JobStatus.QUEUED)


def test_the_overview_shows_the_queue_and_refreshes_itself(page, operator, make_job, control_plane):
    now = dt.datetime.now(dt.UTC)  # the live server reads the wall clock
    make_job(created_at=now - dt.timedelta(seconds=95), updated_at=now)
    running = make_job(created_at=now - dt.timedelta(seconds=300), updated_at=now)
    control_plane.claim(running.pk, "worker-a", now=now)
    make_job(attempt=1, next_attempt_at=now + dt.timedelta(minutes=2), error_code="RI-JOB-STALE")
    log_in(page, "ops")
    page.goto("/admin/analysis_jobs/analysisjob/")
    page.click("text=Queue overview")
    assert "queued 2" in page.inner_text("#health-lines")
    make_job(created_at=now, updated_at=now)
    page.wait_for_function("document.getElementById('health-lines').textContent.includes('queued 3')", timeout=15_000)
    screenshot(page, "overview")


def test_staff_without_the_cancel_permission_are_not_offered_it(page, transactional_db, make_job):
    viewer = User.objects.create_user("viewer", password="pw", is_staff=True)
    viewer.user_permissions.add(*Permission.objects.filter(codename="view_analysisjob"))
    make_job(owner=viewer)
    log_in(page, "viewer")
    page.goto("/admin/analysis_jobs/analysisjob/")
    offered = page.locator("select[name=action] option").all_inner_texts()
    assert "Request cancellation" not in offered
    denied = page.goto("/admin/analysis_jobs/analysisjob/999999/live.json")
    assert denied.status == 404
    screenshot(page, "refused")
