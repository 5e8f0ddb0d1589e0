"""Bulk enqueue: many sources in a few statements, one active job per source, and the command's --from-file."""

import io
import math

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from analysis_jobs.control_plane import DatabaseControlPlane
from analysis_jobs.models import AnalysisJob, AnalysisSnapshot, JobStatus, SnapshotState
from tests.racing import RacingControlPlane

pytestmark = pytest.mark.django_db


@pytest.fixture
def sources(tmp_path):
    paths = []
    for i in range(6):
        path = tmp_path / f"src{i}"
        path.mkdir()
        paths.append(str(path))
    return paths


def test_enqueue_many_creates_one_job_per_new_source_in_order(control_plane, sources):
    results = control_plane.enqueue_many(sources, chunk_size=4)

    assert [job.source for job, _ in results] == sources
    assert all(created for _, created in results)
    assert all(job.pk is not None for job, _ in results)
    assert AnalysisJob.objects.filter(status=JobStatus.QUEUED).count() == len(sources)


def test_a_job_queued_in_bulk_is_the_row_one_enqueue_writes_and_is_returned_as_stored(control_plane, sources, django_user_model):
    owner = django_user_model.objects.create_user("ana")
    single, _ = control_plane.enqueue(sources[0], revision="main", owner=owner, max_attempts=5)
    bulk = [job for job, _ in control_plane.enqueue_many([sources[1], sources[2] + "/caf\u00e9"], revision="main", owner=owner, max_attempts=5)]

    fields = [field.attname for field in AnalysisJob._meta.concrete_fields]
    stored = {row["id"]: row for row in AnalysisJob.objects.values(*fields)}
    for job in bulk:
        assert {name: getattr(job, name) for name in fields} == stored[job.pk]  # what was returned is what was written
        differ = {name for name in fields if stored[job.pk][name] != stored[single.pk][name]}
        assert differ == {"id", "source"}
    assert [job.source for job in bulk] == [sources[1], sources[2] + "/caf\u00e9"]
    assert not any(job._state.adding for job in bulk)


def test_a_source_with_an_active_job_or_named_twice_gets_that_job(control_plane, sources, fake_clock):
    running, _ = control_plane.enqueue(sources[0])
    control_plane.claim(running.pk, "w")
    finished, _ = control_plane.enqueue(sources[1])
    control_plane.request_cancel(finished.pk)

    results = control_plane.enqueue_many([sources[0], sources[1], sources[2], sources[2], sources[0]])

    assert [(job.pk, created) for job, created in results][0] == (running.pk, False)
    assert results[1][1] is True and results[1][0].pk != finished.pk  # only an active job counts
    assert results[2][1] is True
    assert results[3] == (results[2][0], False)
    assert results[4][0].pk == running.pk and results[4][1] is False
    assert AnalysisJob.objects.filter(source=sources[2]).count() == 1


def test_sources_queued_in_bulk_at_a_revision_keep_their_commits_and_reuse_what_was_sealed(control_plane, sources, fake_clock):
    now = fake_clock.now()
    older, newer = (
        AnalysisSnapshot.objects.create(state=SnapshotState.SEALED, identity="id-a", content_hash="a" * 64, created_at=now, sealed_at=now)
        for _ in range(2)
    )
    commits = {source: f"{n:040x}" for n, source in enumerate(sources[:3])}
    identities = {sources[0]: "id-a", sources[1]: "id-a", sources[2]: "id-unsealed"}

    results = control_plane.enqueue_many(sources[:3] + [sources[0]], revision="main", commits=commits, reuse_identities=identities)

    jobs = [job for job, _ in results]
    assert [created for _, created in results] == [True, True, True, False]
    assert jobs[3] == jobs[0]
    assert [(job.commit, job.status, job.snapshot_id) for job in jobs[:3]] == [
        (commits[sources[0]], JobStatus.COMPLETED, older.pk),  # the oldest sealed snapshot of the identity
        (commits[sources[1]], JobStatus.COMPLETED, older.pk),
        (commits[sources[2]], JobStatus.QUEUED, None),
    ]
    stored = {job.source: (job.commit, job.status, job.snapshot_id, job.attempt) for job in AnalysisJob.objects.all()}
    assert stored == {job.source: (job.commit, job.status, job.snapshot_id, 0) for job in jobs[:3]}
    assert newer.pk not in {job.snapshot_id for job in jobs}


def test_the_revision_is_part_of_the_identity(control_plane, sources):
    control_plane.enqueue_many(sources[:2], revision="main")

    results = control_plane.enqueue_many(sources[:2], revision="v2")

    assert all(created for _, created in results)
    assert AnalysisJob.objects.count() == 4


def test_a_chunk_that_collides_with_a_concurrent_enqueue_falls_back_to_one_at_a_time(sources, fake_clock):
    """Another enqueue commits a job for one of the sources between our check for active jobs and our insert."""
    racer = {}

    def rival():
        racer["job"], _ = DatabaseControlPlane(clock=fake_clock).enqueue(sources[1])

    control_plane = RacingControlPlane(rival, clock=fake_clock)

    results = control_plane.enqueue_many(sources[:3])

    assert results[1] == (racer["job"], False)
    assert results[0][1] and results[2][1]
    assert AnalysisJob.objects.filter(status=JobStatus.QUEUED).count() == 3


def test_a_chunk_costs_a_few_queries_not_one_per_source(control_plane, tmp_path, django_assert_max_num_queries):
    paths = [str(tmp_path / f"s{i}") for i in range(500)]
    fields = [f for f in AnalysisJob._meta.concrete_fields if not f.primary_key]
    inserts = math.ceil(len(paths) / connection.ops.bulk_batch_size(fields, paths))  # SQLite: 999 parameters a statement

    # The check for active jobs, the insert, the wake-up, and the savepoint around them.
    with django_assert_max_num_queries(4 + inserts):
        results = control_plane.enqueue_many(paths, chunk_size=500)

    assert len({job.pk for job, _ in results}) == 500


# -- the command ----------------------------------------------------------------------------------------------


def _enqueue(*args, stdin=None):
    out, err = io.StringIO(), io.StringIO()
    call_command("enqueue_analysis", *args, stdout=out, stderr=err, stdin=stdin)
    return out.getvalue().split(), err.getvalue()


def test_the_command_queues_paths_from_a_file_and_from_arguments(sources, tmp_path):
    listing = tmp_path / "paths.txt"
    listing.write_text("\n".join(sources[1:4]) + "\n\n" + sources[1] + "\n")

    ids, err = _enqueue(sources[0], "--from-file", str(listing))

    assert len(ids) == 5
    jobs = AnalysisJob.objects.in_bulk([int(i) for i in ids])
    assert [jobs[int(i)].source for i in ids] == [sources[0], *sources[1:4], sources[1]]
    assert ids[4] == ids[1]  # named twice: one job
    assert "already has an active job" in err
    assert AnalysisJob.objects.count() == 4


def test_the_command_reads_paths_from_standard_input(sources):
    ids, _ = _enqueue("--from-file", "-", stdin=io.StringIO("\n".join(sources) + "\n"))

    assert len(set(ids)) == len(sources) == AnalysisJob.objects.count()


def test_the_command_refuses_a_bad_list_and_queues_nothing(sources, tmp_path):
    with pytest.raises(CommandError, match="cannot read"):
        _enqueue("--from-file", str(tmp_path / "missing.txt"))
    listing = tmp_path / "paths.txt"
    listing.write_text(f"{sources[0]}\n{tmp_path / 'nope'}\n")
    with pytest.raises(CommandError, match="no such file"):
        _enqueue("--from-file", str(listing))
    with pytest.raises(CommandError, match="at least one PATH"):
        _enqueue()
    assert AnalysisJob.objects.count() == 0
