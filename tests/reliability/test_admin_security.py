"""
The admin's security angle: cancelling needs its permission, staff without it are refused, staff who are not
superusers never see or touch another owner's jobs, and the actions are POSTs that CSRF protects.
"""

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.urls import reverse

from analysis_jobs.models import AnalysisJob, JobStatus

CHANGELIST = "admin:analysis_jobs_analysisjob_changelist"


@pytest.fixture
def staff(db):
    def make(name, *codenames):
        user = User.objects.create_user(name, password="pw", is_staff=True)
        user.user_permissions.add(*Permission.objects.filter(codename__in=["view_analysisjob", *codenames]))
        return user

    return make


def _action(client, action, *jobs):
    return client.post(
        reverse(CHANGELIST), {"action": action, "_selected_action": [job.pk for job in jobs], "index": 0}, follow=True
    )


def _running(make_job, owner):
    return make_job(owner=owner, status=JobStatus.RUNNING, attempt=1, worker_id="w", lease_expires_at=owner.date_joined)


def test_staff_without_the_cancel_permission_are_not_offered_it_and_are_refused(client, staff, make_job):
    viewer = staff("viewer")
    job = make_job(owner=viewer)
    client.force_login(viewer)
    page = client.get(reverse(CHANGELIST))
    assert page.status_code == 200 and "request_cancellation" not in page.content.decode()
    _action(client, "request_cancellation", job)
    job.refresh_from_db()
    assert job.status == JobStatus.QUEUED and not job.cancel_requested


def test_the_cancel_permission_acts_on_own_jobs_only(client, staff, make_job):
    canceller = staff("canceller", "cancel_analysisjob")
    other = staff("other", "cancel_analysisjob")
    mine, theirs = _running(make_job, canceller), _running(make_job, other)
    client.force_login(canceller)
    response = _action(client, "request_cancellation", mine, theirs)
    assert "Cancellation requested for 1 job(s)." in response.content.decode()
    assert AnalysisJob.objects.get(pk=mine.pk).cancel_requested
    assert not AnalysisJob.objects.get(pk=theirs.pk).cancel_requested


def test_retry_needs_the_add_permission(client, staff, make_job):
    viewer = staff("viewer", "cancel_analysisjob")
    failed = make_job(owner=viewer, status=JobStatus.FAILED, completed_at=viewer.date_joined)
    client.force_login(viewer)
    _action(client, "retry", failed)
    assert AnalysisJob.objects.count() == 1


def test_staff_never_see_another_owners_jobs(client, staff, make_job):
    me, other = staff("me"), staff("other")
    mine, theirs = make_job(owner=me, source="/src/mine"), make_job(owner=other, source="/src/theirs")
    client.force_login(me)
    listing = client.get(reverse(CHANGELIST)).content.decode()
    assert "/src/mine" in listing and "/src/theirs" not in listing
    page = client.get(reverse("admin:analysis_jobs_analysisjob_change", args=[theirs.pk]))
    assert page.status_code in (302, 404) and "/src/theirs" not in page.content.decode()
    assert client.get(reverse("admin:analysis_jobs_analysisjob_change", args=[mine.pk])).status_code == 200


def test_staff_with_no_job_permission_see_nothing(client, db, make_job):
    bare = User.objects.create_user("bare", password="pw", is_staff=True)
    make_job(owner=bare)
    client.force_login(bare)
    assert client.get(reverse(CHANGELIST)).status_code == 403


def test_actions_are_csrf_protected_posts(staff, make_job):
    canceller = staff("canceller", "cancel_analysisjob")
    job = _running(make_job, canceller)
    client = Client(enforce_csrf_checks=True)
    client.force_login(canceller)
    data = {"action": "request_cancellation", "_selected_action": [job.pk], "index": 0}
    assert client.post(reverse(CHANGELIST), data).status_code == 403  # no token
    assert client.get(reverse(CHANGELIST), data).status_code in (200, 302)  # a GET never runs an action
    assert not AnalysisJob.objects.get(pk=job.pk).cancel_requested

    client.get(reverse(CHANGELIST))
    token = client.cookies["csrftoken"].value
    assert client.post(reverse(CHANGELIST), {**data, "csrfmiddlewaretoken": token}).status_code == 302
    assert AnalysisJob.objects.get(pk=job.pk).cancel_requested
