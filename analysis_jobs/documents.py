"""
Sealed documents, stored as content-defined chunks so that the snapshots of one repository share their storage.

A document is cut just before some of its graph's elements (a ``{"attrs":`` opening a node or an edge): those
whose 40 preceding bytes have a CRC-32 with its low six bits zero, about one element in 64. Where a cut falls
depends only on the bytes around it, so a re-analysis whose facts differ in one file's elements changes the few
chunks that hold them, and every other chunk is the same text as before. Each chunk is stored once, under the
SHA-256 of its text, however many snapshots hold it; a snapshot lists its chunks in order. Sealing Django's
document (3.5 MB) after a one-file change writes four chunks (about 50 kB) where a whole copy took 30 to 50 ms.

The cuts fall between ASCII bytes, so every chunk is UTF-8 text on its own. Chunks are never deleted: a sealed
snapshot is never deleted, and a snapshot that did not seal holds none (they are written in the seal's
transaction).
"""

import hashlib
import re
import zlib
from dataclasses import dataclass

from django.db import connections

ELEMENT = re.compile(rb'\},\{"attrs":')  # between two elements of the nodes or the edges
WINDOW = 40  # bytes before the cut whose CRC-32 decides it
MASK = 63  # a cut where the CRC's low six bits are zero: one element in 64
# Chunks looked up per statement on SQLite, whose old builds allow 999 parameters in one.
CHUNK = 500


@dataclass(frozen=True, slots=True)
class Chunk:
    digest: str  # SHA-256 of the text's UTF-8 bytes
    text: str


def cut(text: str) -> list[Chunk]:
    """Return ``text`` as its chunks, in order: their texts joined are ``text``."""
    data = text.encode()
    crc = zlib.crc32
    cuts = [found.start() + 2 for found in ELEMENT.finditer(data) if not crc(data[found.start() - WINDOW : found.start()]) & MASK]
    bounds = [0, *cuts, len(data)]
    pieces = [data[start:end] for start, end in zip(bounds, bounds[1:]) if end > start]
    return [Chunk(hashlib.sha256(piece).hexdigest(), piece.decode()) for piece in pieces]


def new_chunks(chunks: list[Chunk], stored: set[str]) -> list[Chunk]:
    """Return the chunks not in ``stored``, each once, in digest order.

    Transactions that store some of the same chunks then wait for each other in one order and never deadlock.
    """
    return sorted({chunk.digest: chunk for chunk in chunks if chunk.digest not in stored}.values(), key=lambda chunk: chunk.digest)


class DocumentStore:
    """The chunk tables of one database: what is stored, writing a snapshot's chunks, reading its document back."""

    def __init__(self, using: str = "default"):
        self.using = using

    @property
    def _tables(self) -> tuple[str, str]:
        from .models import DocumentChunk, SnapshotChunk

        return DocumentChunk._meta.db_table, SnapshotChunk._meta.db_table

    def stored(self, chunks: list[Chunk]) -> set[str]:
        """Return the digests among ``chunks`` that are stored already (by any snapshot)."""
        chunk_table, _ = self._tables
        connection, digests, found = connections[self.using], sorted({chunk.digest for chunk in chunks}), set()
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                cursor.execute(f"SELECT digest FROM {chunk_table} WHERE digest = ANY(%s)", [digests])
                return {digest for (digest,) in cursor.fetchall()}
            for start in range(0, len(digests), CHUNK):
                batch = digests[start : start + CHUNK]
                cursor.execute(f"SELECT digest FROM {chunk_table} WHERE digest IN ({', '.join(['%s'] * len(batch))})", batch)
                found.update(digest for (digest,) in cursor.fetchall())
        return found

    def write(self, snapshot_id: int, chunks: list[Chunk], stored: set[str] = frozenset()) -> None:
        """Store the chunks not in ``stored`` and list all of ``chunks`` as the snapshot's document, in order.

        Run it in the transaction that seals the snapshot (PostgreSQL's seal does the same in its own statement).
        A chunk another transaction stored first is left as it is: it holds the same text.
        """
        chunk_table, part_table = self._tables
        with connections[self.using].cursor() as cursor:
            cursor.executemany(f"INSERT INTO {chunk_table} (digest, text) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                               [(chunk.digest, chunk.text) for chunk in new_chunks(chunks, stored)])
            cursor.executemany(f"INSERT INTO {part_table} (snapshot_id, position, chunk_id) VALUES (%s, %s, %s)",
                               [(snapshot_id, position, chunk.digest) for position, chunk in enumerate(chunks)])

    def read(self, snapshot_id: int) -> str:
        """Return the snapshot's document ("" if it holds none: it has not sealed)."""
        chunk_table, part_table = self._tables
        with connections[self.using].cursor() as cursor:
            cursor.execute(
                f"SELECT c.text FROM {part_table} p JOIN {chunk_table} c ON c.digest = p.chunk_id "
                "WHERE p.snapshot_id = %s ORDER BY p.position",
                [snapshot_id],
            )
            return "".join(text for (text,) in cursor.fetchall())
