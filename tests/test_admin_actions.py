"""The admin's actions report what they did, and Retry queues a finished job again as a new job."""

import pytest
from django.contrib.auth.models import Permission, User
from django.urls import reverse

from analysis_jobs.models import AnalysisJob, AnalysisSnapshot, JobStatus, SnapshotState
from analysis_jobs.pipeline import content_hash
from analysis_jobs.pipeline.repository import identity_for_revision
from tests.conftest import commit_all
from tests.documents_support import put_document

CHANGELIST = "admin:analysis_jobs_analysisjob_changelist"


@pytest.fixture
def admin_client(client, db):
    client.force_login(User.objects.create_superuser("root", password="pw"))
    return client


def _post(client, action, *jobs):
    data = {"action": action, "_selected_action": [job.pk for job in jobs], "index": 0}
    return client.post(reverse(CHANGELIST), data, follow=True)


def test_the_changelist_shows_the_queue_columns(admin_client, control_plane, make_job):
    job = make_job()
    control_plane.claim(job.pk, "worker-7")
    page = admin_client.get(reverse(CHANGELIST)).content.decode()
    for heading in ("status", "stage", "progress", "attempt", "worker id", "lease left", "owner", "created at"):
        assert f">{heading}<" in page.lower() or f">{heading}</a>" in page.lower(), heading
    assert "worker-7" in page and "1/3" in page


def test_retry_queues_a_failed_job_as_a_new_job_and_reports_the_ineligible(admin_client, fake_clock, make_job):
    failed = make_job(status=JobStatus.FAILED, completed_at=fake_clock.now(), error_code="RI-JOB-FAILED")
    queued = make_job()
    response = _post(admin_client, "retry", failed, queued)
    assert "Queued 1 job(s) again. 1 not eligible" in response.content.decode()
    again = AnalysisJob.objects.exclude(pk__in=[failed.pk, queued.pk]).get()
    assert (again.source, again.revision, again.status) == (failed.source, failed.revision, JobStatus.QUEUED)
    assert AnalysisJob.objects.get(pk=failed.pk).status == JobStatus.FAILED  # the old row is history


def test_retry_analyses_the_commit_the_job_was_queued_at_not_where_its_branch_points_now(
    admin_client, fake_clock, make_job, source_dir
):
    failed = make_job(revision="main", status=JobStatus.FAILED, completed_at=fake_clock.now())
    (source_dir / "later.py").write_text("")
    assert commit_all(source_dir) != failed.commit  # the branch moved on after the job was queued
    _post(admin_client, "retry", failed)
    again = AnalysisJob.objects.exclude(pk=failed.pk).get()
    assert (again.revision, again.commit, again.status) == ("main", failed.commit, JobStatus.QUEUED)


def test_retry_of_a_commit_analysed_since_completes_at_once(admin_client, fake_clock, make_job):
    failed = make_job(status=JobStatus.FAILED, completed_at=fake_clock.now())
    now, facts = fake_clock.now(), '{"nodes":[]}'
    sealed = AnalysisSnapshot.objects.create(identity=identity_for_revision(failed.source, failed.commit), created_at=now)
    AnalysisSnapshot.objects.filter(pk=sealed.pk).update(
        state=SnapshotState.SEALED, size=len(facts.encode()), content_hash=content_hash(facts), sealed_at=now
    )
    put_document(sealed.pk, facts)
    _post(admin_client, "retry", failed)
    again = AnalysisJob.objects.exclude(pk=failed.pk).get()
    assert (again.status, again.snapshot_id, again.commit) == (JobStatus.COMPLETED, sealed.pk, failed.commit)


def test_request_cancellation_reports_acted_and_ineligible(admin_client, fake_clock, make_job):
    queued = make_job()
    done = make_job(status=JobStatus.CANCELLED, completed_at=fake_clock.now())
    response = _post(admin_client, "request_cancellation", queued, done)
    assert "Cancellation requested for 1 job(s). 1 not eligible" in response.content.decode()
    assert AnalysisJob.objects.get(pk=queued.pk).status == JobStatus.CANCELLED


def test_the_change_page_says_why_the_job_is_not_running(admin_client, control_plane, make_job, fake_clock, monkeypatch):
    from analysis_jobs import admin

    monkeypatch.setattr(admin, "clock", fake_clock)
    job = make_job()
    control_plane.claim(job.pk, "worker-7")
    page = admin_client.get(reverse("admin:analysis_jobs_analysisjob_change", args=[job.pk])).content.decode()
    assert "why isn&#x27;t it running?" in page.lower()
    assert "Running on worker worker-7" in page


def test_the_overview_is_linked_from_the_list_and_its_json_moves_with_the_queue(admin_client, make_job, fake_clock, monkeypatch):
    from analysis_jobs import admin

    monkeypatch.setattr(admin, "clock", fake_clock)
    overview = reverse("admin:analysis_jobs_analysisjob_overview")
    assert overview in admin_client.get(reverse(CHANGELIST)).content.decode()
    make_job()
    page = admin_client.get(overview).content.decode()
    assert "Queue overview" in page and "queued 1" in page
    make_job()
    data = admin_client.get(reverse("admin:analysis_jobs_analysisjob_overview_json")).json()
    assert data["health"]["jobs"]["queued"] == 2 and data["lines"][0].startswith("jobs      queued 2")


def test_a_live_job_page_polls_its_json_and_others_jobs_stay_hidden(client, admin_client, control_plane, make_job, fake_clock, monkeypatch):
    from analysis_jobs import admin

    monkeypatch.setattr(admin, "clock", fake_clock)
    job = make_job()
    live = reverse("admin:analysis_jobs_analysisjob_live", args=[job.pk])
    assert live in admin_client.get(reverse("admin:analysis_jobs_analysisjob_change", args=[job.pk])).content.decode()
    control_plane.claim(job.pk, "worker-9")
    assert admin_client.get(live).json()["why"].startswith("Running on worker worker-9")
    staff = User.objects.create_user("staff", password="pw", is_staff=True)
    staff.user_permissions.add(*Permission.objects.filter(codename="view_analysisjob"))
    client.force_login(staff)
    assert client.get(live).status_code == 404  # not theirs
    assert client.get(reverse("admin:analysis_jobs_analysisjob_overview")).status_code == 200


def test_the_overview_needs_the_view_permission(client, db):
    client.force_login(User.objects.create_user("plain", password="pw", is_staff=True))
    assert client.get(reverse("admin:analysis_jobs_analysisjob_overview")).status_code == 403
