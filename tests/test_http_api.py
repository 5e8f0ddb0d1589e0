"""The HTTP API: each status code, owner scoping, the source-root check, tokens and sessions."""

import json

import pytest
from django.contrib.auth.models import Permission, User
from django.core.management import call_command
from django.test import Client

from analysis_jobs.models import AnalysisJob, ApiToken
from tests.conftest import commit_all
from tests.documents_support import stored_document


@pytest.fixture
def roots(settings, source_dir):
    settings.ANALYSIS_JOBS = dict(settings.ANALYSIS_JOBS, SOURCE_ROOTS=[str(source_dir.parent)])
    return source_dir.parent


def client_of(user, fake_clock) -> Client:
    _token, secret = ApiToken.issue(user, "test", now=fake_clock.now())
    return Client(HTTP_AUTHORIZATION=f"Bearer {secret}")


@pytest.fixture
def alice(db, fake_clock):
    return client_of(User.objects.create_user("alice"), fake_clock)


@pytest.fixture
def bob(db, fake_clock):
    return client_of(User.objects.create_user("bob"), fake_clock)


def post(client, url, body=None, raw=None):
    return client.post(url, raw if raw is not None else json.dumps(body or {}), content_type="application/json")


def test_submit_status_and_list(alice, roots, source_dir):
    created = post(alice, "/api/analyses/", {"source": str(source_dir)})
    assert created.status_code == 201
    job = created.json()
    assert (job["status"], job["source"]) == ("queued", str(source_dir.resolve()))
    assert job["why"].startswith("Waiting behind 0 older eligible jobs")
    again = post(alice, "/api/analyses/", {"source": str(source_dir)})
    assert (again.status_code, again.json()["id"]) == (200, job["id"])
    assert alice.get(f"/api/analyses/{job['id']}/").json()["id"] == job["id"]
    listed = alice.get("/api/analyses/?status=queued").json()
    assert [row["id"] for row in listed["results"]] == [job["id"]] and listed["next"] is None
    assert alice.get("/api/analyses/?status=failed").json()["results"] == []


def test_the_list_pages_by_cursor(alice, roots, source_dir, make_job, monkeypatch):
    from analysis_jobs import http_api

    monkeypatch.setattr(http_api, "PAGE_SIZE", 2)
    owner = User.objects.get(username="alice")
    jobs = [make_job(owner=owner) for _ in range(5)]
    seen, url = [], "/api/analyses/"
    while url:
        page = alice.get(url).json()
        seen += [row["id"] for row in page["results"]]
        url = page["next"]
    assert seen == [job.pk for job in reversed(jobs)]


@pytest.mark.parametrize(("body", "code"), [
    ({"source": ""}, "invalid-source"),
    ({"source": 7}, "invalid-source"),
    ({"source": "/etc"}, "source-outside-roots"),
    ({"source": "/no/such/folder"}, "source-not-found"),
    ({"source": "SOURCE", "revision": "no-such-branch"}, "revision-not-found"),
    ({"source": "SOURCE", "revision": 3}, "invalid-revision"),
])
def test_bad_submissions_are_400_with_a_stable_code_and_queue_nothing(alice, roots, source_dir, body, code):
    commit_all(source_dir)
    body = {key: (str(source_dir) if value == "SOURCE" else value) for key, value in body.items()}
    response = post(alice, "/api/analyses/", body)
    assert (response.status_code, response.json()["error"]["code"]) == (400, code)
    assert AnalysisJob.objects.count() == 0


def test_malformed_json_bad_status_and_bad_cursor_are_400(alice, roots):
    assert post(alice, "/api/analyses/", raw="{not json").json()["error"]["code"] == "invalid-json"
    assert alice.get("/api/analyses/?status=lost").json()["error"]["code"] == "invalid-status"
    assert alice.get("/api/analyses/?after=abc").status_code == 400


def test_no_roots_configured_refuses_every_source(alice, source_dir):
    response = post(alice, "/api/analyses/", {"source": str(source_dir)})
    assert (response.status_code, response.json()["error"]["code"]) == (400, "source-outside-roots")


def test_another_owners_job_is_404_and_staff_with_the_permission_see_it(alice, bob, roots, source_dir, fake_clock):
    job = post(alice, "/api/analyses/", {"source": str(source_dir)}).json()["id"]
    for url in (f"/api/analyses/{job}/", f"/api/analyses/{job}/facts/"):
        assert bob.get(url).status_code == 404
    assert post(bob, f"/api/analyses/{job}/cancel/").status_code == 404
    assert bob.get("/api/analyses/").json()["results"] == []
    assert post(bob, "/api/analyses/", {"source": str(source_dir)}).status_code == 409  # alice's is active
    staff = User.objects.create_user("carol", is_staff=True)
    staff.user_permissions.add(Permission.objects.get(codename="view_analysisjob"))
    carol = client_of(staff, fake_clock)
    assert carol.get(f"/api/analyses/{job}/").status_code == 200
    assert post(carol, f"/api/analyses/{job}/cancel/").status_code == 403  # seeing is not cancelling


def test_cancel_is_202_then_409_once_finished(alice, roots, source_dir, control_plane):
    job = post(alice, "/api/analyses/", {"source": str(source_dir)}).json()["id"]
    response = post(alice, f"/api/analyses/{job}/cancel/")
    assert (response.status_code, response.json()["outcome"]) == (202, "cancelled")
    again = post(alice, f"/api/analyses/{job}/cancel/")
    assert (again.status_code, again.json()["error"]["code"]) == (409, "job-finished")


def test_facts_are_the_canonical_bytes_with_the_graph_hash_as_etag(alice, roots, control_plane, make_job):
    job = make_job(owner=User.objects.get(username="alice"))
    assert alice.get(f"/api/analyses/{job.pk}/facts/").json()["error"]["code"] == "not-completed"
    lease = control_plane.claim(job.pk, "w1")
    document = stored_document('{"schema":"ri.v1"}')
    assert control_plane.seal(lease, snapshot_id=control_plane.begin_snapshot(lease), document=document)
    assert control_plane.complete(lease)
    response = alice.get(f"/api/analyses/{job.pk}/facts/")
    assert b"".join(response.streaming_content) == b'{"schema":"ri.v1"}'
    assert response["ETag"] == f'"{document.content_hash}"'
    assert alice.get(f"/api/analyses/{job.pk}/facts/", HTTP_IF_NONE_MATCH=response["ETag"]).status_code == 304


def test_no_credentials_or_a_wrong_token_is_401_and_a_wrong_method_405(db, alice):
    assert Client().get("/api/analyses/").status_code == 401
    assert Client(HTTP_AUTHORIZATION="Bearer wrong").get("/api/analyses/").json()["error"]["code"] == "unauthenticated"
    response = alice.delete("/api/analyses/")
    assert (response.status_code, response["Allow"]) == (405, "GET, POST")


def test_a_browser_session_works_and_its_post_needs_the_csrf_token(db, roots, source_dir):
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(User.objects.create_user("dora"))
    assert browser.get("/api/analyses/").status_code == 200
    refused = post(browser, "/api/analyses/", {"source": str(source_dir)})
    assert (refused.status_code, refused.json()["error"]["code"]) == (403, "csrf-failed")


def test_create_api_token_prints_a_token_that_works_and_stores_only_its_digest(db, capsys):
    User.objects.create_user("erin")
    call_command("create_api_token", "erin", "--name", "ci")
    secret = capsys.readouterr().out.strip()
    assert ApiToken.objects.get().digest == ApiToken.digest_of(secret) != secret
    assert Client(HTTP_AUTHORIZATION=f"Bearer {secret}").get("/api/analyses/").status_code == 200
