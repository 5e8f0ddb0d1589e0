"""Pruning the per-file caches: only what was recorded before the cutoff goes, and it costs a read, never a result."""

import datetime as dt
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from analysis_jobs.models import AnalysisSnapshot, BlobDigest, FileFacts, SnapshotBasis, SnapshotState, StatDigest
from analysis_jobs.pipeline import AnalysisState, RepositoryPipeline
from analysis_jobs.pipeline.repository import Digest, FactsCache
from analysis_jobs.pipeline.canonical import content_hash
from tests.pipeline_support import write_tree

NOW = dt.datetime(2026, 6, 1, 12, 0, tzinfo=dt.UTC)


def at(moment: dt.datetime):
    """A wall clock (``time_ns``) stopped at ``moment``."""
    return lambda: int(moment.timestamp()) * 10**9


def record(moment: dt.datetime, n: int, tag: str) -> None:
    """Record ``n`` facts, blob digests and file stamps at ``moment``, their keys made of ``tag``."""
    cache = FactsCache(time_ns=at(moment))
    shas = [f"{tag}{i:063x}" for i in range(n)]
    cache.put_many({(sha, "python@1"): '{"defs":[]}' for sha in shas})
    cache.put_digests("git", {f"{tag}{i:039x}": Digest(1, sha, 1, False) for i, sha in enumerate(shas)})
    cache.put_digests("directory", {f"{tag}{i:063x}": Digest(1, sha, 1, False) for i, sha in enumerate(shas)})


def tables() -> dict[str, set]:
    return {
        "file facts": set(FileFacts.objects.values_list("sha256", flat=True)),
        "blob digests": set(BlobDigest.objects.values_list("oid", flat=True)),
        "file stamps": set(StatDigest.objects.values_list("stamp", flat=True)),
    }


def test_rows_are_recorded_at_the_time_the_cache_is_given(db):
    record(NOW, 1, "a")
    assert {row.recorded_at for model in (FileFacts, BlobDigest, StatDigest) for row in model.objects.all()} == {NOW}


def test_prune_deletes_the_rows_recorded_before_the_cutoff_and_keeps_the_rest(db, monkeypatch):
    monkeypatch.setattr(FactsCache, "PRUNE_BATCH", 2)  # five old rows a table: three statements each
    record(NOW - dt.timedelta(days=40), 5, "a")
    record(NOW - dt.timedelta(days=1), 3, "b")
    kept = {name: {key for key in keys if key.startswith("b")} for name, keys in tables().items()}

    cutoff = NOW - dt.timedelta(days=30)
    assert FactsCache().prune(cutoff, dry_run=True) == {"file facts": 5, "blob digests": 5, "file stamps": 5, "splice bases": 0}
    assert all(len(keys) == 8 for keys in tables().values()), "a dry run deleted rows"

    assert FactsCache().prune(cutoff) == {"file facts": 5, "blob digests": 5, "file stamps": 5, "splice bases": 0}
    assert tables() == kept
    assert FactsCache().prune(cutoff) == {"file facts": 0, "blob digests": 0, "file stamps": 0, "splice bases": 0}


def test_a_pruned_cache_costs_a_read_and_a_parse_never_a_different_result(db, tmp_path):
    root = write_tree(tmp_path / "r", {"pkg/__init__.py": "", "pkg/a.py": "import os\nimport pkg\n", "README.md": "# r\n"})
    settled = NOW + dt.timedelta(days=365)  # every file is long written by then, so each gets a stamp

    def analyse(moment):
        state = AnalysisState(source=str(root))
        pipeline = RepositoryPipeline(reuse=False, time_ns=at(moment))
        for stage in pipeline.stages:
            stage.run(state, lambda: None)
        return state.values["stats"], content_hash(b"".join(pipeline.document(state)).decode())

    first, digest = analyse(settled)
    assert StatDigest.objects.count() == 3 and FileFacts.objects.count() == 2  # the README has no extractor
    assert FactsCache().prune(settled + dt.timedelta(seconds=1)) == {"file facts": 2, "blob digests": 0, "file stamps": 3, "splice bases": 0}
    again, same = analyse(settled)
    assert (again["read"], again["parsed"], again["remembered"]) == (first["read"], first["parsed"], 0) == (3, 2, 0)
    assert same == digest


def test_the_command_prunes_by_age_in_days_and_says_what_it_did(db):
    now = dt.datetime.now(dt.UTC)
    record(now - dt.timedelta(days=10), 2, "a")
    record(now - dt.timedelta(hours=1), 1, "b")

    def run(*args):
        out = StringIO()
        call_command("prune_analysis_cache", *args, stdout=out)
        return out.getvalue()

    assert run("--older-than", "7", "--dry-run").startswith("would prune 2 file facts, 2 blob digests, 2 file stamps, 0 splice bases, 0 unlisted document chunks recorded before ")
    assert all(len(keys) == 3 for keys in tables().values())
    assert run("--older-than", "7").startswith("pruned 2 file facts, 2 blob digests, 2 file stamps, 0 splice bases, 0 unlisted document chunks recorded before ")
    assert run().startswith("pruned 0 file facts, 0 blob digests, 0 file stamps")  # the default keeps 30 days
    assert all(len(keys) == 1 for keys in tables().values())
    assert run("--older-than", "0").startswith("pruned 1 file facts, 1 blob digests, 1 file stamps")


@pytest.mark.parametrize("value, message", [("-1", "must be a number of days from 0 to 36500"), ("nan", "from 0 to"),
                                            ("1e9", "from 0 to"), ("soon", "'soon' is not a number of days")])
def test_the_command_refuses_an_age_that_is_not_a_number_of_days_and_prunes_nothing(db, value, message):
    record(NOW - dt.timedelta(days=400), 1, "a")
    with pytest.raises(CommandError, match=message):
        call_command("prune_analysis_cache", "--older-than", value, stdout=StringIO(), stderr=StringIO())
    assert all(len(keys) == 1 for keys in tables().values())


def test_prune_deletes_the_splice_bases_recorded_before_the_cutoff(db):
    def basis(recorded_at, lineage):
        snapshot = AnalysisSnapshot.objects.create(created_at=recorded_at, state=SnapshotState.SEALED, sealed_at=recorded_at, content_hash="0" * 64)
        return SnapshotBasis.objects.create(snapshot=snapshot, lineage=lineage, data=b"", recorded_at=recorded_at)

    basis(NOW - dt.timedelta(days=40), "a")
    kept = basis(NOW - dt.timedelta(days=1), "b")
    assert FactsCache().prune(NOW - dt.timedelta(days=30))["splice bases"] == 1
    assert list(SnapshotBasis.objects.all()) == [kept]
    assert AnalysisSnapshot.objects.count() == 2  # a basis is pruned, never its snapshot
