"""Sealed-document fixtures: a document's chunks stored as an owner would have stored them before its seal."""

import datetime as dt

from analysis_jobs.documents import DocumentStore, StoredDocument, cut
from analysis_jobs.pipeline import content_hash


def stored_document(text: str = "{}", using: str = "default") -> StoredDocument:
    """Store the chunks of ``text`` (with no owner's guard) and return what a seal of it takes."""
    chunks = cut(text)
    DocumentStore(using).put_chunks(chunks, dt.datetime(2026, 1, 1, tzinfo=dt.UTC))
    return StoredDocument(content_hash(text), len(text.encode()), tuple(chunk.digest for chunk in chunks))


def put_document(snapshot_id: int, text: str, using: str = "default") -> None:
    """Store ``text`` as snapshot ``snapshot_id``'s document (a fixture: no seal, no guard)."""
    DocumentStore(using).put_list(snapshot_id, stored_document(text, using).digests)
