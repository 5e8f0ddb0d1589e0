"""The snapshot admin: a sealed snapshot's summary and a download of its canonical JSON, only for its owners."""

import json

import pytest
from django.contrib.auth.models import Permission, User
from django.db import connection
from django.urls import reverse

from analysis_jobs.models import AnalysisJob, AnalysisSnapshot, JobStatus, SnapshotState
from analysis_jobs.pipeline import canonical_json, content_hash
from tests.documents_support import put_document


def sealed_snapshot(now, owner, facts):
    snapshot = AnalysisSnapshot.objects.create(created_at=now)
    AnalysisSnapshot.objects.filter(pk=snapshot.pk).update(
        state=SnapshotState.SEALED, size=len(facts.encode()), content_hash=content_hash(facts), sealed_at=now,
        summary=json.loads(facts).get("summary"),
    )
    put_document(snapshot.pk, facts)
    AnalysisJob.objects.create(
        source="/src", owner=owner, status=JobStatus.COMPLETED, snapshot=snapshot, created_at=now, updated_at=now,
        completed_at=now, progress=100,
    )
    return AnalysisSnapshot.objects.get(pk=snapshot.pk)


@pytest.fixture
def document():
    summary = {
        "files": 2, "bytes": 10, "languages": {"python": 2}, "modules": {"python": 2}, "symbols": 1, "imports": 0,
        "dependencies": {}, "services": ["api.example.com"], "iac": {"images": [], "compose_services": 0, "terraform": 0},
        "diagnostics": 0, "nodes": 3, "edges": 0,
    }
    return canonical_json({"schema": "ri.v1", "extractors": {}, "nodes": [], "edges": [], "summary": summary})


@pytest.fixture
def staff(db):
    def make(name):
        user = User.objects.create_user(name, password="pw", is_staff=True)
        user.user_permissions.add(Permission.objects.get(codename="view_analysissnapshot"))
        return user

    return make


def test_the_change_page_shows_the_summary_and_the_download_sends_the_canonical_json(client, staff, fake_clock, document):
    owner = staff("owner")
    snapshot = sealed_snapshot(fake_clock.now(), owner, document)
    client.force_login(owner)
    page = client.get(reverse("admin:analysis_jobs_analysissnapshot_change", args=[snapshot.pk]))
    assert page.status_code == 200
    body = page.content.decode()
    assert "files         2 (10 bytes)" in body and "services      api.example.com" in body
    url = reverse("admin:analysis_jobs_analysissnapshot_facts", args=[snapshot.pk])
    assert url in body
    download = client.get(url)
    assert download.status_code == 200
    assert b"".join(download.streaming_content) == document.encode()
    assert download["Content-Length"] == str(len(document.encode()))
    assert download["Content-Type"] == "application/json; charset=utf-8"
    assert download["Content-Disposition"] == f'attachment; filename="snapshot-{snapshot.pk}-{snapshot.content_hash[:12]}.json"'


def test_staff_see_only_the_snapshots_of_their_own_jobs(client, staff, fake_clock, document):
    snapshot = sealed_snapshot(fake_clock.now(), staff("owner"), document)
    client.force_login(staff("other"))
    assert client.get(reverse("admin:analysis_jobs_analysissnapshot_facts", args=[snapshot.pk])).status_code == 404
    listing = client.get(reverse("admin:analysis_jobs_analysissnapshot_changelist"))
    assert listing.status_code == 200 and snapshot.content_hash not in listing.content.decode()
    superuser = User.objects.create_superuser("root", password="pw")
    client.force_login(superuser)
    download = client.get(reverse("admin:analysis_jobs_analysissnapshot_facts", args=[snapshot.pk]))
    assert b"".join(download.streaming_content) == document.encode()


def test_a_snapshot_that_is_not_sealed_has_nothing_to_download(client, db, fake_clock):
    snapshot = AnalysisSnapshot.objects.create(created_at=fake_clock.now())
    client.force_login(User.objects.create_superuser("root", password="pw"))
    assert client.get(reverse("admin:analysis_jobs_analysissnapshot_facts", args=[snapshot.pk])).status_code == 404


def test_the_snapshot_search_matches_a_hash_prefix_in_any_case_through_the_hash_index(client, db, fake_clock, document):
    owner = User.objects.create_superuser("root", password="pw")
    snapshot = sealed_snapshot(fake_clock.now(), owner, document)
    other = sealed_snapshot(fake_clock.now(), owner, document.replace("api.example.com", "api.example.org"))
    client.force_login(owner)
    changelist = reverse("admin:analysis_jobs_analysissnapshot_changelist")

    def found(term):
        page = client.get(changelist, {"q": term})
        assert page.status_code == 200
        return {pk for pk in (snapshot.pk, other.pk) if f"/{pk}/change/" in page.content.decode()}

    assert found(snapshot.content_hash[:12]) == {snapshot.pk}
    assert found(f" {snapshot.content_hash[:12].upper()} ") == {snapshot.pk}
    assert found(snapshot.content_hash[5:20]) == set()  # a prefix, not a substring anywhere
    assert found("") == {snapshot.pk, other.pk}
    if connection.vendor == "postgresql":
        queryset = AnalysisSnapshot.objects.filter(content_hash__startswith="ab")
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL enable_seqscan = off")
            plan = queryset.explain()
        assert "Index Cond: (((content_hash)::text ~>=~ 'ab'::text)" in plan, plan
