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
from analysis_jobs.documents import DocumentStore, cut
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


def test_a_document_without_elements_is_one_chunk():
    assert [chunk.text for chunk in cut('{"graph":{"edges":[],"nodes":[]}}')] == ['{"graph":{"edges":[],"nodes":[]}}']


# -- storing ---------------------------------------------------------------------------------------------------


def seal(control_plane, text: str) -> AnalysisSnapshot:
    lease = control_plane.claim_next("w1")
    content_hash = hashlib.sha256(text.encode()).hexdigest()
    assert control_plane.seal(lease, snapshot_id=lease.snapshot_id, facts=text, content_hash=content_hash)
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
    monkeypatch.setattr(DocumentStore, "stored", lambda self, chunks: set())
    assert seal(control_plane, text).read_facts() == text
    assert DocumentChunk.objects.count() == stored


def test_a_refused_seal_stores_no_chunk_and_lists_none(db, control_plane, make_job):
    make_job()
    lease = control_plane.claim_next("w1")
    control_plane.request_cancel(lease.job_id)
    assert not control_plane.seal(lease, snapshot_id=lease.snapshot_id, facts=document(), content_hash="c" * 64)
    assert (DocumentChunk.objects.count(), SnapshotChunk.objects.count()) == (0, 0)
    assert AnalysisSnapshot.objects.get(pk=lease.snapshot_id).state == SnapshotState.BUILDING


def test_a_building_snapshot_reads_back_no_document(db, control_plane, make_job):
    make_job()
    lease = control_plane.claim_next("w1")
    assert AnalysisSnapshot.objects.get(pk=lease.snapshot_id).read_facts() == ""


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
    rival.execute("INSERT INTO analysis_jobs_documentchunk (digest, text) SELECT * FROM unnest(%s::text[], %s::text[])",
                  [[chunk.digest for chunk in chunks], [chunk.text for chunk in chunks]])
    rival_pid = rival.info.backend_pid
    outcome, errors = [], []

    def sealing():
        try:
            outcome.append(control_plane.seal(lease, snapshot_id=lease.snapshot_id, facts=text, content_hash="a" * 64))
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
