"""
Sealed documents, stored as content-defined chunks so that the snapshots of one repository share their storage.

A document is cut just before some of its graph's elements (a ``{"attrs":`` opening a node or an edge after
``},``): those whose 40 preceding bytes have a CRC-32 with its low six bits zero, about one element in 64. Where a
cut falls depends only on the bytes around it, so a re-analysis whose facts differ in one file's elements changes
the few chunks that hold them, and every other chunk is the same text as before. Each chunk is stored once, under
the SHA-256 of its text, however many snapshots hold it; a snapshot lists its chunks in order. Sealing Django's
document (3.5 MB) after a one-file change writes four chunks (about 50 kB) where a whole copy took 30 to 50 ms.

A document is written as it is made (``ChunkWriter`` takes it a piece at a time, hashing it and cutting it as the
pieces come), so a big one is never held whole: its chunks are stored a batch at a time by the job's owner
before the seal, and the seal lists them. The cuts fall between ASCII bytes, so every chunk is UTF-8 text on its
own. A chunk that no sealed snapshot lists (its seal was refused, or its worker died first) is deleted by
``prune_analysis_cache`` once it is older than the age given; a sealed snapshot's chunks are never deleted.
"""

import hashlib
import re
import zlib
from collections.abc import Iterable
from dataclasses import dataclass

from django.db import connections

from .cursors import server_binding

ELEMENT = re.compile(rb'\},\{"attrs":')  # between two elements of the nodes or the edges
ELEMENT_BYTES = len(b'},{"attrs":')
WINDOW = 40  # bytes before the cut whose CRC-32 decides it
MASK = 63  # a cut where the CRC's low six bits are zero: one element in 64
# Chunks looked up per statement on SQLite, whose old builds allow 999 parameters in one.
CHUNK = 500


@dataclass(frozen=True, slots=True)
class Chunk:
    digest: str  # SHA-256 of the text's UTF-8 bytes
    text: str

    @classmethod
    def of(cls, data: bytes) -> "Chunk":
        return cls(hashlib.sha256(data).hexdigest(), data.decode())


@dataclass(frozen=True, slots=True)
class StoredDocument:
    """A document whose chunks are stored: what its seal records."""

    content_hash: str  # SHA-256 of the whole text: the graph hash
    size: int  # bytes of UTF-8 text
    digests: tuple[str, ...]  # its chunks, in order


class ChunkWriter:
    """Cut a document into chunks as its bytes arrive, and hash it whole.

    ``write`` returns the chunks that the bytes so far complete; ``finish`` the last one. The chunks are the ones
    ``cut`` gives the whole text, however the bytes were split into pieces.
    """

    def __init__(self):
        self.hash = hashlib.sha256()
        self.size = 0
        self.digests: list[str] = []
        self._buffer = bytearray()  # the chunk being written
        self._before = b""  # the last WINDOW bytes before the buffer
        self._scanned = 0  # the buffer holds no cut before this offset

    def write(self, data: bytes) -> list[Chunk]:
        self.hash.update(data)
        self.size += len(data)
        buffer = self._buffer
        buffer += data
        chunks, start = [], 0
        with memoryview(buffer) as view:  # its slices are not copies (the view is let go before the buffer shrinks)
            # A boundary may straddle the last piece and this one: look again at the last few bytes scanned.
            for found in ELEMENT.finditer(buffer, max(0, self._scanned - ELEMENT_BYTES + 1)):
                at = found.start()
                if zlib.crc32(view[at - WINDOW : at] if at >= WINDOW else (self._before + buffer[:at])[-WINDOW:]) & MASK:
                    continue
                chunks.append(Chunk.of(bytes(view[start : at + 2])))
                start = at + 2
        if start:
            self._before = (self._before + buffer[max(0, start - WINDOW) : start])[-WINDOW:]
            del buffer[:start]
        self._scanned = len(buffer)
        self.digests.extend(chunk.digest for chunk in chunks)
        return chunks

    def finish(self) -> tuple[list[Chunk], StoredDocument]:
        """Return the last chunk (if any bytes remain) and the document all the chunks make."""
        last = [Chunk.of(bytes(self._buffer))] if self._buffer else []
        self.digests.extend(chunk.digest for chunk in last)
        self._buffer = bytearray()
        return last, StoredDocument(self.hash.hexdigest(), self.size, tuple(self.digests))


def cut(text: str) -> list[Chunk]:
    """Return ``text`` as its chunks, in order: their texts joined are ``text``."""
    writer = ChunkWriter()
    chunks = writer.write(text.encode())
    return chunks + writer.finish()[0]


def new_chunks(chunks: Iterable[Chunk], stored: set[str]) -> list[Chunk]:
    """Return the chunks not in ``stored``, each once, in digest order.

    Transactions that store some of the same chunks then wait for each other in one order and never deadlock.
    """
    return sorted({chunk.digest: chunk for chunk in chunks if chunk.digest not in stored}.values(), key=lambda chunk: chunk.digest)


class DocumentStore:
    """The chunk tables of one database: what is stored, writing chunks and a snapshot's list, reading it back."""

    def __init__(self, using: str = "default"):
        self.using = using

    @property
    def _tables(self) -> tuple[str, str]:
        from .models import DocumentChunk, SnapshotChunk

        return DocumentChunk._meta.db_table, SnapshotChunk._meta.db_table

    def stored(self, digests: Iterable[str]) -> set[str]:
        """Return those of ``digests`` that a snapshot lists (so no prune deletes them while it does).

        A chunk stored but listed by none (its seal never came) is not counted: it is sent again, and storing it
        again makes it young, so a prune of old orphans does not delete it under the seal that will list it.
        """
        _, part_table = self._tables
        connection, digests, found = connections[self.using], sorted(set(digests)), set()
        if not digests:
            return found
        with server_binding(connection) as cursor:
            if connection.vendor == "postgresql":
                cursor.execute(f"SELECT DISTINCT chunk_id FROM {part_table} WHERE chunk_id = ANY(%s)", [digests])
                return {digest for (digest,) in cursor.fetchall()}
            for start in range(0, len(digests), CHUNK):
                batch = digests[start : start + CHUNK]
                cursor.execute(f"SELECT DISTINCT chunk_id FROM {part_table} WHERE chunk_id IN ({', '.join(['%s'] * len(batch))})", batch)
                found.update(digest for (digest,) in cursor.fetchall())
        return found

    def put_chunks(self, chunks: list[Chunk], recorded_at, *, guard: str = "", params: dict | None = None) -> bool:
        """Store ``chunks`` (each once, in digest order) if the SQL condition ``guard`` holds; return whether it did.

        A chunk stored already (by this or a concurrent analysis) keeps its text, which is the same, and takes the
        new ``recorded_at``.
        """
        chunk_table, _ = self._tables
        connection = connections[self.using]
        chunks = new_chunks(chunks, set())
        condition = f"WHERE {guard}" if guard else ""
        params = {**(params or {}), "recorded_at": connection.ops.adapt_datetimefield_value(recorded_at)}
        with server_binding(connection) as cursor:
            if connection.vendor == "postgresql":
                # The arrays go in binary (%b): as text, every quote of the JSON is escaped for the array literal
                # and parsed back by the server, which took 5.3 s for 48 MB of chunks where binary takes 0.5.
                cursor.execute(
                    f"WITH owner AS (SELECT 1 AS one {condition}), stored AS ("
                    f"INSERT INTO {chunk_table} (digest, text, recorded_at) "
                    "SELECT new.digest, new.text, %(recorded_at)s FROM owner, unnest(%(digests)b::text[], %(texts)b::text[]) "
                    "AS new (digest, text) ON CONFLICT (digest) DO UPDATE SET recorded_at = excluded.recorded_at) "
                    "SELECT count(*) FROM owner",
                    {**params, "digests": [chunk.digest for chunk in chunks], "texts": [chunk.text for chunk in chunks]},
                )
                return cursor.fetchone()[0] == 1
            cursor.execute(f"SELECT 1 {condition}", params)
            if cursor.fetchone() is None:
                return False
            cursor.executemany(f"INSERT INTO {chunk_table} (digest, text, recorded_at) VALUES (%s, %s, %s) "
                               "ON CONFLICT (digest) DO UPDATE SET recorded_at = excluded.recorded_at",
                               [(chunk.digest, chunk.text, params["recorded_at"]) for chunk in chunks])
            return True

    def put_list(self, snapshot_id: int, digests: tuple[str, ...]) -> None:
        """List ``digests`` as the snapshot's document, in order (SQLite's seal; PostgreSQL's does it in its statement)."""
        _, part_table = self._tables
        with connections[self.using].cursor() as cursor:
            cursor.executemany(f"INSERT INTO {part_table} (snapshot_id, position, chunk_id) VALUES (%s, %s, %s)",
                               [(snapshot_id, position, digest) for position, digest in enumerate(digests)])

    def read(self, snapshot_id: int) -> str:
        """Return the snapshot's document ("" if it holds none: it has not sealed)."""
        return "".join(self.iter(snapshot_id))

    def iter(self, snapshot_id: int, batch: int = 64):
        """Yield the snapshot's document a chunk's text at a time, fetching ``batch`` chunks per round trip.

        Each round trip names a range of positions (they run from 0 without a gap), not "the next ``batch``
        after": whatever plan the server picks, it reads ``batch`` rows. Asked for the next ones, PostgreSQL,
        before it has gathered statistics on a table just filled, joined every later chunk and then kept 64,
        so reading back a 57,000-chunk document (as a re-analysis splicing from it does) took 40 s, not 1.
        """
        chunk_table, part_table = self._tables
        start = 0
        with connections[self.using].cursor() as cursor:
            while True:
                cursor.execute(
                    f"SELECT c.text FROM {part_table} p JOIN {chunk_table} c ON c.digest = p.chunk_id "
                    "WHERE p.snapshot_id = %s AND p.position >= %s AND p.position < %s ORDER BY p.position",
                    [snapshot_id, start, start + batch],
                )
                rows = cursor.fetchall()
                for (text,) in rows:
                    yield text
                if len(rows) < batch:
                    return
                start += batch

    def prune(self, before, *, dry_run: bool = False) -> int:
        """Delete the chunks stored before ``before`` that no snapshot lists; return how many went (or would go)."""
        from .models import DocumentChunk, SnapshotChunk

        orphans = DocumentChunk.objects.using(self.using).filter(recorded_at__lt=before).exclude(
            digest__in=SnapshotChunk.objects.using(self.using).values("chunk_id")
        )
        if dry_run:
            return orphans.count()
        return orphans.delete()[0]
