"""
Sealed documents stored as chunks: where they are cut, and how the snapshots of one repository share them.

The database tests run on both engines, except the one that needs a second transaction holding chunks that a
seal wants: it runs on PostgreSQL only.
"""

import hashlib
import threading
import time

import psycopg
import pytest
from django.db import connection, connections

from analysis_jobs.control_plane import DatabaseControlPlane
import datetime as dt
import random

from analysis_jobs.documents import ChunkWriter, DocumentStore, cut
from analysis_jobs.pipeline import content_hash
from analysis_jobs.models import AnalysisSnapshot, DocumentChunk, SnapshotChunk, SnapshotState
from analysis_jobs.pipeline.canonical import canonical_json


def document(files: int = 3000, renamed: int | None = None) -> str:
    """A canonical document shaped like a sealed one: a graph with one node per file."""
    def path(index):
        return f"pkg/m{index}{'_renamed' if index == renamed else ''}.py"

    nodes = [{"attrs": {"lines": index, "path": path(index)}, "id": f"n{index}"} for index in range(files)]
    return canonical_json({"graph": {"edges": [], "nodes": nodes}})


# -- cutting ---------------------------------------------------------------------------------------------------


def test_a_documents_chunks_join_back_to_it_each_named_by_the_sha256_of_its_text():
    text = document()
    chunks = cut(text)
    assert len(chunks) > 10
    assert "".join(chunk.text for chunk in chunks) == text
    assert all(chunk.digest == hashlib.sha256(chunk.text.encode()).hexdigest() for chunk in chunks)


def test_a_document_is_cut_only_just_before_an_element_of_its_graph():
    chunks = cut(document())
    assert chunks[0].text.startswith('{"graph":')
    assert all(chunk.text.startswith('{"attrs":') for chunk in chunks[1:])


def test_a_change_to_one_element_changes_only_the_chunk_that_holds_it():
    before, after = cut(document()), cut(document(renamed=1500))
    changed = {chunk.digest for chunk in after} - {chunk.digest for chunk in before}
    assert len(changed) == 1
    assert "pkg/m1500_renamed.py" in next(chunk.text for chunk in after if chunk.digest in changed)


@pytest.mark.parametrize("seed", range(5))
def test_a_document_written_in_pieces_is_cut_and_hashed_as_the_whole_text_is(seed):
    text = document().replace("pkg/m7.py", "pkg/naïve.py")
    data, pieces, at = text.encode(), [], 0
    rng = random.Random(seed)
    while at < len(data):  # pieces of 1 to 50 bytes: boundaries and windows straddle them
        size = rng.randint(1, 50)
        pieces.append(data[at : at + size])
        at += size
    writer, chunks = ChunkWriter(), []
    for piece in pieces:
        chunks += writer.write(piece)
    last, stored = writer.finish()
    chunks += last
    assert [chunk.text for chunk in chunks] == [chunk.text for chunk in cut(text)]
    assert (stored.content_hash, stored.size, stored.digests) == (
        content_hash(text), len(data), tuple(chunk.digest for chunk in chunks),
    )


def test_a_document_without_elements_is_one_chunk():
    assert [chunk.text for chunk in cut('{"graph":{"edges":[],"nodes":[]}}')] == ['{"graph":{"edges":[],"nodes":[]}}']


# -- storing ---------------------------------------------------------------------------------------------------


def seal(control_plane, text: str, pieces: int = 7) -> AnalysisSnapshot:
    """Store ``text`` as a worker does (in pieces, under its lease), seal it, and return the snapshot."""
    lease = control_plane.claim_next("w1")
    data = text.encode()
    step = len(data) // pieces + 1
    stored = control_plane.store_document(lease, (data[at : at + step] for at in range(0, len(data), step)))
    assert stored is not None and stored.content_hash == content_hash(text)
    assert control_plane.seal(lease, snapshot_id=lease.snapshot_id, document=stored)
    return AnalysisSnapshot.objects.get(pk=lease.snapshot_id)


def test_a_sealed_snapshot_reads_back_its_document_byte_for_byte_with_its_size(db, control_plane, make_job):
    text = document().replace("pkg/m7.py", "pkg/naïve.py")  # a two-byte character: size counts bytes
    make_job()
    snapshot = seal(control_plane, text)
    assert snapshot.read_facts() == text
    assert snapshot.size == len(text.encode()) == len(text) + 1
    assert SnapshotChunk.objects.filter(snapshot=snapshot).count() == len(cut(text))


def test_two_snapshots_of_one_repository_store_the_chunks_they_share_once(db, control_plane, make_job):
    first, second = document(), document(renamed=1500)
    make_job()
    make_job()
    one, two = seal(control_plane, first), seal(control_plane, second)
    assert (one.read_facts(), two.read_facts()) == (first, second)
    assert DocumentChunk.objects.count() == len({chunk.digest for chunk in cut(first) + cut(second)}) == len(cut(first)) + 1


def test_a_seal_that_looked_up_its_chunks_before_another_seal_stored_them_shares_them(
    db, control_plane, make_job, monkeypatch
):
    text = document()
    make_job()
    make_job()
    seal(control_plane, text)
    stored = DocumentChunk.objects.count()
    # The lookup ran before the first seal committed: it found nothing, and every chunk is sent again.
    monkeypatch.setattr(DocumentStore, "stored", lambda self, digests: set())
    assert seal(control_plane, text).read_facts() == text
    assert DocumentChunk.objects.count() == stored


def test_a_document_stored_in_batches_stores_each_batch_while_the_lease_holds(db, control_plane, make_job, monkeypatch):
    monkeypatch.setattr(DatabaseControlPlane, "DOCUMENT_BATCH_BYTES", 20_000)
    text = document()
    make_job()
    assert seal(control_plane, text).read_facts() == text
    assert DocumentChunk.objects.count() == len({chunk.digest for chunk in cut(text)})


def test_a_document_whose_job_was_cancelled_while_it_was_stored_stores_no_more_and_seals_nothing(
    db, control_plane, make_job, monkeypatch
):
    monkeypatch.setattr(DatabaseControlPlane, "DOCUMENT_BATCH_BYTES", 20_000)
    text = document()
    make_job()
    lease = control_plane.claim_next("w1")
    data = text.encode()

    def pieces():
        yield data[: len(data) // 2]
        control_plane.request_cancel(lease.job_id)  # accepted while the worker writes: the next batch is refused
        yield data[len(data) // 2 :]

    assert control_plane.store_document(lease, pieces()) is None
    stored_before_cancel = DocumentChunk.objects.count()
    assert 0 < stored_before_cancel < len(cut(text))
    assert SnapshotChunk.objects.count() == 0
    assert AnalysisSnapshot.objects.get(pk=lease.snapshot_id).state == SnapshotState.BUILDING


def test_a_refused_seal_lists_no_chunk(db, control_plane, make_job):
    make_job()
    lease = control_plane.claim_next("w1")
    stored = control_plane.store_document(lease, [document().encode()])
    control_plane.request_cancel(lease.job_id)
    assert not control_plane.seal(lease, snapshot_id=lease.snapshot_id, document=stored)
    assert SnapshotChunk.objects.count() == 0
    assert AnalysisSnapshot.objects.get(pk=lease.snapshot_id).state == SnapshotState.BUILDING


def test_chunks_no_snapshot_lists_are_pruned_once_old_and_listed_ones_never(db, control_plane, make_job, fake_clock):
    make_job()
    make_job()
    kept = seal(control_plane, document(files=300))
    orphan = control_plane.claim_next("w1")
    control_plane.store_document(orphan, [document(files=300, renamed=7).encode()])  # its seal never comes
    unlisted = DocumentChunk.objects.exclude(digest__in=SnapshotChunk.objects.values("chunk_id")).count()
    assert unlisted == 1
    store = DocumentStore()
    assert store.prune(fake_clock.now()) == 0  # stored now: not older than the cutoff
    later = fake_clock.now() + dt.timedelta(days=31)
    assert store.prune(later, dry_run=True) == 1 and DocumentChunk.objects.count() == len(cut(document(files=300))) + 1
    assert store.prune(later) == 1
    assert kept.read_facts() == document(files=300)


def test_an_unlisted_chunk_stored_again_is_young_again_so_a_prune_keeps_it_for_the_seal(db, control_plane, make_job, fake_clock):
    text = document(files=300)
    make_job()
    make_job()
    first = control_plane.claim_next("w1")
    control_plane.store_document(first, [text.encode()])  # its worker dies before the seal
    fake_clock.advance(40 * 86400)
    second = control_plane.claim_next("w1")
    stored = control_plane.store_document(second, [text.encode()])
    assert DocumentStore().prune(fake_clock.now() - dt.timedelta(days=30)) == 0
    assert control_plane.seal(second, snapshot_id=second.snapshot_id, document=stored)
    assert AnalysisSnapshot.objects.get(pk=second.snapshot_id).read_facts() == text


def test_a_building_snapshot_reads_back_no_document(db, control_plane, make_job):
    make_job()
    lease = control_plane.claim_next("w1")
    assert AnalysisSnapshot.objects.get(pk=lease.snapshot_id).read_facts() == ""


@pytest.mark.postgres_only
def test_reading_a_document_back_reads_only_the_chunks_each_round_trip_returns(db, control_plane, make_job):
    # Inside the test's transaction no statistics are gathered on the rows just sealed: the plan PostgreSQL
    # picks for a table it knows nothing of is the one a re-analysis met after a big seal.
    text = document(300000)
    make_job()
    snapshot = seal(control_plane, text)
    statements = []

    def record(execute, sql, params, many, context):
        statements.append((sql, params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        assert snapshot.read_facts() == text
    assert len(statements) == len(cut(text)) // 64 + 1
    with connection.cursor() as cursor:
        for sql, params in statements[:3]:
            cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params)
            assert max(_rows(cursor.fetchone()[0][0]["Plan"])) <= 64


def _rows(plan: dict):
    """Yield the rows each node of an ``EXPLAIN (ANALYZE, FORMAT JSON)`` plan produced, over all its loops."""
    yield plan["Actual Rows"] * plan["Actual Loops"]
    for child in plan.get("Plans", ()):
        yield from _rows(child)


@pytest.mark.postgres_only
def test_a_seal_waits_for_a_transaction_storing_the_same_chunks_and_then_shares_them(
    transactional_db, make_job, fake_clock
):
    text = document()
    chunks = cut(text)
    make_job()
    control_plane = DatabaseControlPlane(clock=fake_clock, lease_seconds=30)
    lease = control_plane.claim_next("w1")
    settings = connection.settings_dict
    rival = psycopg.connect(
        dbname=settings["NAME"], user=settings["USER"], password=settings["PASSWORD"],
        host=settings["HOST"], port=settings["PORT"],
    )
    # The rival stores every chunk of the document and has not committed when the seal starts.
    rival.execute("INSERT INTO analysis_jobs_documentchunk (digest, text, recorded_at) SELECT *, now() FROM unnest(%s::text[], %s::text[])",
                  [[chunk.digest for chunk in chunks], [chunk.text for chunk in chunks]])
    rival_pid = rival.info.backend_pid
    outcome, errors = [], []

    def sealing():
        try:
            stored = control_plane.store_document(lease, [text.encode()])
            outcome.append(control_plane.seal(lease, snapshot_id=lease.snapshot_id, document=stored))
        except BaseException as error:  # surfaced below; a thread must not die silently
            errors.append(error)
        finally:
            connections.close_all()

    thread = threading.Thread(target=sealing)
    thread.start()
    with psycopg.connect(rival.info.dsn, password=settings["PASSWORD"], autocommit=True) as observer:
        # Wait until the seal is blocked on the rival's uncommitted chunks (a state observed, not a guess).
        blocked = "SELECT count(*) FROM pg_stat_activity WHERE %s = ANY(pg_blocking_pids(pid))"
        deadline = time.monotonic() + 30
        while observer.execute(blocked, [rival_pid]).fetchone()[0] == 0:
            assert time.monotonic() < deadline, "the seal never waited for the rival's chunks"
            time.sleep(0.01)
        assert outcome == []
        rival.commit()
    rival.close()
    thread.join(timeout=30)
    assert (errors, outcome) == ([], [True])
    assert AnalysisSnapshot.objects.get(pk=lease.snapshot_id).read_facts() == text
    assert DocumentChunk.objects.count() == len({chunk.digest for chunk in chunks})
