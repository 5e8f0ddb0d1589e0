"""
The repository pipeline: resolve the source, read and extract every file once, link the facts into a graph.

Stages (the worker renews the lease and observes cancellation between them, and ``check()`` is called between
files inside them):

- ``resolve``: the source must be a readable directory; a job with a revision but no recorded commit has it
  resolved now. A git revision whose identity already has a sealed snapshot stops here (``SnapshotReused``).
- ``extract``: list the source through the exclusions and safety rules, then read files in batches: each file
  is read once, hashed and sniffed for binary from the same bytes; one cache look-up per batch finds the files
  whose (sha256, extractor) facts are known, and only the others are parsed. A file seen before (by any
  analysis) is not read at all: the digests of the listed files, with their cached facts, are looked up by
  stamp (a git blob's id, a directory file's stat stamp) in one statement before the first batch. The
  budgets (files, bytes, seconds) fail the job with ``RI-RESOURCE-EXCEEDED``.
- ``link``: the identity (a directory's is known only now, from its tree digest) is checked for reuse, then
  the families learn from every file what they must know first (modules, manifests). When the last sealed
  analysis of the same source, schema, extractors, linking and settings left a basis, and the families learnt
  the same as then, only the files that changed since are linked (``splice.py``). Otherwise the per-file facts
  become one graph, a batch of files at a time, spilled to sorted runs on disk past ``config.facts_in_memory``
  so that memory stays bounded.

``document`` then yields the canonical document in pieces, merged from the runs as it is written (or the last
document, read back with the changed files' elements replaced); the worker hashes and stores it a chunk at a
time, so neither the facts nor the document are ever held whole. Once it is sealed, ``sealed`` keeps the basis
the next analysis of the source splices from.
"""

import datetime as dt
import hashlib
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import islice

from ..cursors import server_binding
from ..exceptions import ResourceExceeded
from .base import AnalysisState, Check, SnapshotReused, Stage
from .config import PipelineConfig
from .extractors import extractor_for, extractor_versions
from .graph import GraphRuns
from .link import VERSION as LINK_VERSION, Linker
from .parsing import Parsers
from .records import FileRecord
from .sources import Exclusions, GitSource, open_source, resolve_revision
from .splice import Basis, Plan, Relink, SnapshotBases, Splice, plan, signature
from .summary import Summary
from .writer import DocumentWriter, write_document

SCHEMA = "ri.v1"
BINARY_SNIFF = 8000  # git's own heuristic: a NUL byte in the first 8000 bytes means binary

LANGUAGES = {
    ".py": "python", ".pyi": "python", ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript",
    ".jsx": "javascript", ".ts": "typescript", ".tsx": "typescript", ".mts": "typescript", ".cts": "typescript",
    ".go": "go", ".rs": "rust", ".java": "java", ".kt": "kotlin", ".rb": "ruby", ".php": "php", ".c": "c", ".h": "c",
    ".cc": "cpp", ".cpp": "cpp", ".hpp": "cpp", ".cs": "csharp", ".swift": "swift", ".json": "json", ".toml": "toml",
    ".yaml": "yaml", ".yml": "yaml", ".md": "markdown", ".rst": "restructuredtext", ".txt": "text", ".html": "html",
    ".css": "css", ".scss": "css", ".sh": "shell", ".bash": "shell", ".tf": "terraform", ".sql": "sql",
    ".xml": "xml", ".po": "gettext", ".cfg": "ini", ".ini": "ini",
}


def language_of(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    if name in ("Dockerfile", "Containerfile") or name.startswith(("Dockerfile.", "Containerfile.")) or name.endswith(".dockerfile"):
        return "dockerfile"
    return LANGUAGES.get(os.path.splitext(name)[1].lower(), "other")


def _digest(parts: dict) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def snapshot_identity(source_identity: str, revision: str, config: PipelineConfig) -> str:
    """Return the identity of an analysis: source, commit or tree digest, schema, extractors, linking and config."""
    return _digest({"revision": revision, **_lineage(source_identity, config)})


def snapshot_lineage(source_identity: str, config: PipelineConfig) -> str:
    """Return what analyses of one source share whatever its revision: the last one's document is spliced from."""
    return _digest(_lineage(source_identity, config))


def _lineage(source_identity: str, config: PipelineConfig) -> dict:
    return {"source": source_identity, "schema": SCHEMA, "extractors": extractor_versions(), "linker": LINK_VERSION,
            "config": config.digest()}


def identity_for_revision(path: str, commit: str, config: PipelineConfig | None = None) -> str:
    """Return the identity an analysis of ``commit`` of the repository at ``path`` will have."""
    source = GitSource(path, commit, Exclusions(()))
    return snapshot_identity(source.identity, commit, config or PipelineConfig.from_settings())


def tree_digest(records: list[FileRecord]) -> str:
    """Return a digest of what was listed: each path with its kind, size and content hash (or why it was not read).

    The size counts on its own: a file too large to read has no content hash, yet its size is in the facts.
    """
    digest = hashlib.sha256()
    for record in sorted(records, key=lambda record: record.path):
        line = f"{record.path}\0{record.kind}\0{record.size}\0{record.sha256}\0{record.skipped}\0{record.inside:d}\n"
        digest.update(line.encode())
    return digest.hexdigest()


@dataclass(frozen=True, slots=True)
class Digest:
    """What a file's bytes say about it, its facts apart."""

    size: int
    sha256: str
    lines: int
    binary: bool

    @classmethod
    def of(cls, data: bytes) -> "Digest":
        lines = data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
        return cls(len(data), hashlib.sha256(data).hexdigest(), lines, b"\0" in data[:BINARY_SNIFF])


class FactsCache:
    """Per-file facts by (sha256, extractor key), and files' digests by stamp, read and written in bulk.

    The look-ups are SQL written out: a re-analysis runs them for every file of the source, and for Django's tree
    the ORM's ``IN`` queries took twice what one joined statement does (96 ms against 45 ms on PostgreSQL).
    """

    # On SQLite a look-up binds one parameter per key, and old SQLite builds allow 999 in a statement.
    CHUNK = 500
    # Keys per look-up on PostgreSQL: few round trips, and never the cached facts of a whole big tree in one
    # result, which the client holds whole (a 100,000-file re-analysis peaked at 376 MiB with one, 320 without).
    PG_CHUNK = 5000
    # Rows deleted per statement when pruning, so that no one transaction holds a big table's worth of locks.
    PRUNE_BATCH = 5000

    def __init__(self, using: str = "default", *, time_ns=time.time_ns):
        self.using = using
        self.time_ns = time_ns  # the wall clock whose time each row is recorded at

    def _now(self) -> dt.datetime:
        return dt.datetime.fromtimestamp(self.time_ns() / 1e9, dt.UTC)

    def get_many(self, keys: set[tuple[str, str]]) -> dict[tuple[str, str], str]:
        """Return the cached facts (JSON text) of each of ``keys`` that has them."""
        from ..models import FileFacts

        sql = f"SELECT sha256, extractor, facts FROM {FileFacts._meta.db_table} WHERE sha256 IN ({{}})"
        rows = self._select(sql, {sha for sha, _ in keys})
        return {(sha, key): facts for sha, key, facts in rows if (sha, key) in keys}

    def get_digests(self, kind: str, stamps: list[str]) -> tuple[dict[str, Digest], dict[tuple[str, str], str]]:
        """Return the digests of the files among ``stamps`` read before, and all the cached facts (JSON text) of their contents.

        ``kind`` is the source's: a git blob's stamp is its object id, a directory file's its stat stamp.
        """
        from ..models import FileFacts

        model, key = self._digests(kind)
        sql = (
            f'SELECT d.{key}, d.size, d.sha256, d.lines, d."binary", f.extractor, f.facts FROM {model._meta.db_table} d '
            f"LEFT JOIN {FileFacts._meta.db_table} f ON f.sha256 = d.sha256 WHERE d.{key} IN ({{}})"
        )
        digests, facts = {}, {}
        for stamp, size, sha256, lines, binary, extractor, text in self._select(sql, set(stamps)):
            digests[stamp] = Digest(size, sha256, lines, bool(binary))
            if extractor is not None:
                facts[(sha256, extractor)] = text
        return digests, facts

    def put_many(self, facts: dict[tuple[str, str], str]) -> None:
        """Record the facts (JSON text) of each key; a key recorded already is left as it is."""
        if not facts:
            return
        from django.db import connections

        from ..models import FileFacts

        connection = connections[self.using]
        columns = f"{FileFacts._meta.db_table} (sha256, extractor, facts, recorded_at)"
        now = connection.ops.adapt_datetimefield_value(self._now())
        with server_binding(connection) as cursor:
            if connection.vendor == "postgresql":
                # Three arrays, zipped by the server: one statement per batch whatever its size. In binary (%b),
                # as the document's chunks are (documents.py): the facts are JSON, full of quotes to escape.
                cursor.execute(
                    f"INSERT INTO {columns} SELECT *, %s FROM unnest(%b::text[], %b::text[], %b::text[]) ON CONFLICT DO NOTHING",
                    [now, *map(list, zip(*((sha, key, text) for (sha, key), text in facts.items())))],
                )
            else:
                cursor.executemany(f"INSERT OR IGNORE INTO {columns} VALUES (%s, %s, %s, %s)",
                                   [(sha, key, text, now) for (sha, key), text in facts.items()])

    def put_digests(self, kind: str, digests: dict[str, Digest]) -> None:
        """Record ``digests`` by stamp; a stamp recorded already (by a concurrent analysis, say) is left as it is.

        Written out for the same reason as the look-ups: a full analysis records a digest for every file, and
        for Django's 3,662 files ``bulk_create`` took 89 ms on PostgreSQL where this statement takes 28.
        """
        if not digests:
            return
        from django.db import connections

        model, key = self._digests(kind)
        connection = connections[self.using]
        columns = f'{model._meta.db_table} ({key}, size, sha256, lines, "binary", recorded_at)'
        now = connection.ops.adapt_datetimefield_value(self._now())
        rows = [(stamp, digest.size, digest.sha256, digest.lines, digest.binary) for stamp, digest in digests.items()]
        with server_binding(connection) as cursor:
            if connection.vendor == "postgresql":
                # Each column as one text, split by the server (hex digests, integers and booleans hold no commas).
                cursor.execute(
                    f"INSERT INTO {columns} SELECT *, %s FROM unnest(string_to_array(%s, ','), "
                    "string_to_array(%s, ',')::bigint[], string_to_array(%s, ','), string_to_array(%s, ',')::integer[], "
                    "string_to_array(%s, ',')::boolean[]) ON CONFLICT DO NOTHING",
                    [now, *(",".join(map(str, column)) for column in zip(*rows))],
                )
            else:
                cursor.executemany(f"INSERT OR IGNORE INTO {columns} VALUES (%s, %s, %s, %s, %s, %s)",
                                   [(*row, now) for row in rows])

    def prune(self, before: dt.datetime, *, dry_run: bool = False) -> dict[str, int]:
        """Delete the facts and digests recorded before ``before``; return how many rows of each went (or would go).

        Nothing depends on a cached row being there: a file whose row went is read (and parsed) again by the next
        analysis that lists it, and recorded anew. An analysis running meanwhile keeps what it has looked up.
        """
        from ..models import BlobDigest, FileFacts, SnapshotBasis, StatDigest

        counts = {}
        for name, model in (("file facts", FileFacts), ("blob digests", BlobDigest), ("file stamps", StatDigest),
                            ("splice bases", SnapshotBasis)):
            rows = model.objects.using(self.using).filter(recorded_at__lt=before)
            if dry_run:
                counts[name] = rows.count()
                continue
            counts[name] = 0
            while deleted := model.objects.using(self.using).filter(pk__in=rows.values("pk")[: self.PRUNE_BATCH]).delete()[0]:
                counts[name] += deleted
        return counts

    @staticmethod
    def _digests(kind: str):
        from ..models import BlobDigest, StatDigest

        return (BlobDigest, "oid") if kind == "git" else (StatDigest, "stamp")

    def _select(self, sql: str, values: set[str]) -> Iterator[tuple]:
        """Run ``sql``, whose ``{}`` stands for a list of ``values`` (hex digests), and yield its rows, one
        statement's worth at a time: a re-analysis of a big tree looks up every file, with its cached facts."""
        from django.db import connections

        if not values:
            return  # a batch whose files were all known asks for nothing: no round trip
        connection, values = connections[self.using], sorted(values)
        postgresql = connection.vendor == "postgresql"
        size = self.PG_CHUNK if postgresql else self.CHUNK
        with server_binding(connection) as cursor:
            for start in range(0, len(values), size):
                chunk = values[start : start + size]
                if postgresql:
                    # One text parameter, split by the server: psycopg adapts a list of thousands of strings, or
                    # parses a statement with thousands of placeholders, in more time than the server runs the query.
                    cursor.execute(sql.format("SELECT unnest(string_to_array(%s, ','))"), [",".join(chunk)])
                else:
                    cursor.execute(sql.format(", ".join(["%s"] * len(chunk))), chunk)
                yield from cursor.fetchall()


class MemoryFactsCache:
    """A ``FactsCache`` in dicts, for analyses that must not touch a database (tests, benchmarks)."""

    def __init__(self):
        self.entries: dict[tuple[str, str], str] = {}
        self.digests: dict[str, Digest] = {}  # by stamp, of either kind: a blob id and a stat stamp never meet

    def get_many(self, keys):
        return {key: self.entries[key] for key in keys if key in self.entries}

    def put_many(self, facts):
        for key, text in facts.items():
            self.entries.setdefault(key, text)

    def get_digests(self, kind, stamps):
        digests = {stamp: self.digests[stamp] for stamp in stamps if stamp in self.digests}
        contents = {digest.sha256 for digest in digests.values()}
        return digests, {key: text for key, text in self.entries.items() if key[0] in contents}

    def put_digests(self, kind, digests):
        for stamp, digest in digests.items():
            self.digests.setdefault(stamp, digest)


def _facts_known(extractor, digest: Digest, known: dict) -> bool:
    """Return whether a file with ``digest``, read by ``extractor`` unless binary, needs no facts or has them in ``known``."""
    return extractor is None or digest.binary or (digest.sha256, extractor.key) in known


class RepositoryPipeline:
    """The analysis a worker runs by default: ``resolve``, ``extract``, ``link``.

    ``cache`` keeps per-file facts (the database table by default), ``bases`` what a re-analysis splices from
    (``splice.SnapshotBases`` by default); with ``reuse`` off, no sealed snapshot is looked up and every
    analysis runs to the end.
    """

    def __init__(
        self, config: PipelineConfig | None = None, *, monotonic=time.monotonic, time_ns=time.time_ns,
        using: str = "default", cache=None, bases=None, reuse: bool = True,
    ):
        self.config = config or PipelineConfig.from_settings()
        self.monotonic = monotonic
        self.time_ns = time_ns
        self.using = using
        self.cache = cache if cache is not None else FactsCache(using, time_ns=time_ns)
        self.bases = bases if bases is not None else SnapshotBases(using)
        self.reuse = reuse
        self.stages = (Stage("resolve", self.resolve), Stage("extract", self.extract), Stage("link", self.link))

    # -- stages ------------------------------------------------------------------------------------------------

    def resolve(self, state: AnalysisState, check: Check) -> None:
        state.values["started"] = self.monotonic()
        commit = state.commit or (resolve_revision(state.source, state.revision) if state.revision else "")
        source = open_source(state.source, commit, self._exclusions(), time_ns=self.time_ns)
        state.values["source_identity"] = source.identity
        state.values["commit"] = commit
        if commit:
            state.values["identity"] = snapshot_identity(source.identity, commit, self.config)
            self._reuse(state.values["identity"])

    def extract(self, state: AnalysisState, check: Check) -> None:
        source = open_source(state.source, state.values["commit"], self._exclusions(), time_ns=self.time_ns)
        stats = state.values["stats"] = {"listed": 0, "read": 0, "remembered": 0, "parsed": 0, "cached": 0}
        records: list[FileRecord] = []
        config, pending, total, entries = self.config, [], 0, []
        parsers = Parsers(config.extract_processes)
        parsing = None  # the batch whose files the processes parse while the next one is read
        try:
            # The listing (up to one entry past the budget) is whole before any file is read, so the files read
            # before, with the cached facts of their contents, are looked up at once: per batch, the round
            # trips cost more.
            for entry in islice(source.entries(), config.max_files + 1):
                check()
                self._within_time(state)
                entries.append(entry)
            remembered = self.cache.get_digests(source.kind, [entry.stamp for entry in entries[: config.max_files] if entry.stamp])
            for entry in entries:
                stats["listed"] += 1
                if stats["listed"] > config.max_files:
                    raise ResourceExceeded(f"The source has more than {config.max_files} files (the ANALYSIS_MAX_FILES budget).")
                if entry.kind != "file":
                    records.append(FileRecord(entry.path, entry.kind, inside=entry.inside))
                    continue
                if entry.size > config.max_file_bytes:
                    records.append(FileRecord(entry.path, "file", entry.size, language=language_of(entry.path), skipped="too-large"))
                    continue
                total += entry.size
                if total > config.max_total_bytes:
                    raise ResourceExceeded(f"The source holds more than {config.max_total_bytes} bytes (the ANALYSIS_MAX_TOTAL_BYTES budget).")
                pending.append(entry)
                if len(pending) >= config.batch_files:
                    parsing = self._read_batch(state, source, pending, records, check, remembered, parsers, parsing)
                    pending = []
            self._read_batch(state, source, pending, records, check, remembered, parsers, parsing).finish()
        finally:
            parsers.close()
            source.close()
        stats["parse_processes"] = parsers.started
        state.values["records"] = records

    def link(self, state: AnalysisState, check: Check) -> None:
        records = state.values["records"]
        if "identity" not in state.values:
            state.values["identity"] = snapshot_identity(state.values["source_identity"], f"tree:{tree_digest(records)}", self.config)
            self._reuse(state.values["identity"])
        check()
        linker = Linker(records)
        linker.learn()
        lineage = state.values["lineage"] = snapshot_lineage(state.values["source_identity"], self.config)
        state.values["learnt"] = linker.learnt
        state.values["signatures"] = [signature(record) for record in linker.records]
        basis = self.bases.latest(lineage)
        spliced = plan(basis, linker, linker.records, self.cache, self.config.facts_in_memory) if basis else Relink.NO_BASIS
        if isinstance(spliced, Plan):
            state.values["splice"] = (spliced, linker, {record.path: record for record in linker.records})
            state.values["stats"]["spliced"] = len(spliced.changed)
        else:
            state.values["stats"]["linked_in_full"] = str(spliced)
            runs = state.values["graph"] = GraphRuns(self.config.facts_in_memory)
            linker.link(runs, batch=self.config.batch_files, check=check)
        del state.values["records"]  # linked: the facts are in the graph's runs now (or the splice holds them)

    # -- the Pipeline contract ---------------------------------------------------------------------------------

    def document(self, state: AnalysisState) -> Iterator[bytes]:
        """Yield the canonical document in pieces: the linked graph's (its runs merged as it is written) or the splice's."""
        if "splice" in state.values:
            spliced, linker, records = state.values.pop("splice")
            splice = Splice(spliced, linker, records, self.bases.document(spliced.basis.snapshot_id))
            state.values["writer"], state.values["summary"] = splice.writer, splice.summary
            yield from splice.pieces(SCHEMA, extractor_versions())
            return
        runs = state.values.pop("graph")
        summary = state.values["summary"] = Summary()
        writer = state.values["writer"] = DocumentWriter()
        try:
            nodes, edges = runs.build()
            yield from write_document(SCHEMA, extractor_versions(), nodes, edges, summary, writer)
        finally:
            runs.close()

    def sealed(self, state: AnalysisState, snapshot_id: int) -> None:
        """Keep the basis the next analysis of this source splices from, now that ``snapshot_id`` holds the document."""
        basis = Basis(snapshot_id, state.values["signatures"], state.values["learnt"], state.values["writer"].index,
                      state.values["summary"].state())
        self.bases.put(snapshot_id, state.values["lineage"], basis, dt.datetime.fromtimestamp(self.time_ns() / 1e9, dt.UTC))

    def summary(self, state: AnalysisState) -> dict:
        return state.values["summary"].result()

    def identity(self, state: AnalysisState) -> str:
        return state.values.get("identity", "")

    def stats(self, state: AnalysisState) -> dict:
        """Return what the analysis did (files listed, read, parsed, taken from the cache; spliced or why not)."""
        return state.values.get("stats", {})

    # -- helpers -----------------------------------------------------------------------------------------------

    def _exclusions(self) -> Exclusions:
        return Exclusions(self.config.exclude, honour_gitignore=self.config.honour_gitignore)

    def _within_time(self, state: AnalysisState) -> None:
        if self.monotonic() - state.values["started"] > self.config.max_seconds:
            raise ResourceExceeded(f"The analysis ran longer than {self.config.max_seconds:g} seconds (the ANALYSIS_MAX_SECONDS budget).")

    def _reuse(self, identity: str) -> None:
        if not self.reuse:
            return
        from ..models import AnalysisSnapshot, SnapshotState

        sealed = (
            AnalysisSnapshot.objects.using(self.using)
            .filter(identity=identity, state=SnapshotState.SEALED)
            .order_by("pk")
            .values_list("pk", flat=True)
            .first()
        )
        if sealed is not None:
            raise SnapshotReused(sealed)

    def _read_batch(self, state, source, entries, records, check, remembered, parsers, previous: "BatchParsing | None") -> "BatchParsing":
        """Add each of ``entries`` to ``records``, reading no file whose stamp was seen with its facts, and start
        parsing what has no facts yet; then finish ``previous`` (the batch before, parsed meanwhile). Return this
        batch's parsing, to be finished after the next batch is read, or last.

        ``remembered`` holds the digests of the files read before, by stamp, and the cached facts of their
        contents. A file is read at most once: for its digest, or (a git blob whose digest is known but not its
        facts, as after an extractor's version changes) for its facts. A directory's file in that case is read
        as one never seen, digest and all: unlike a blob's, its bytes can have changed since they were stamped.
        Facts are parsed (by ``parsers``) only when neither the cache, this batch nor the one before has them.
        """
        limit, stats = self.config.max_file_bytes, state.values["stats"]
        seen, known = remembered
        in_progress = set(previous.keys) if previous is not None else set()
        readers = {entry.path: extractor_for(entry.path) for entry in entries}  # unless the file is binary
        digests = {}  # by path
        for entry in entries:
            digest = seen.get(entry.stamp)
            if digest is not None and (source.content_addressed or _facts_known(readers[entry.path], digest, known)):
                digests[entry.path] = digest
        unread = [entry for entry in entries if entry.path not in digests]
        stats["remembered"] += len(digests)
        contents, read = {}, {}
        for entry, data in source.read(unread, limit):
            check()
            if data is None or len(data) > limit:
                records.append(FileRecord(entry.path, "file", entry.size, language=language_of(entry.path),
                                          skipped="unreadable" if data is None else "too-large"))
                continue
            stats["read"] += 1
            contents[entry.path] = data
            digests[entry.path] = digest = Digest.of(data)
            if entry.stamp:
                read[entry.stamp] = digest
        self.cache.put_digests(source.kind, read)
        wanted = []
        for entry in entries:
            digest = digests.get(entry.path)
            if digest is None:
                continue  # not read: recorded above
            extractor = None if digest.binary else readers[entry.path]
            record = FileRecord(entry.path, "file", digest.size, digest.sha256, digest.binary, digest.lines,
                                language_of(entry.path), extractor.key if extractor else "")
            records.append(record)
            if extractor is not None:
                wanted.append((record, extractor, entry))
        # The cached facts of what was just read (a blob seen before brought its own).
        known.update(self.cache.get_many({(record.sha256, extractor.key) for record, extractor, entry in wanted
                                          if entry.path in contents}))
        unparsed = [entry for record, extractor, entry in wanted
                    if (record.sha256, extractor.key) not in known and entry.path not in contents]
        for entry, data in source.read(unparsed, limit):  # git blobs, known by digest only
            stats["read"] += 1
            contents[entry.path] = data
        parse = {}  # what neither the cache nor an earlier file has: (sha256, key) -> (extractor, bytes)
        for record, extractor, entry in wanted:
            key = (record.sha256, extractor.key)
            if key not in known and key not in parse and key not in in_progress:
                parse[key] = (extractor, contents[entry.path])

        def checked():
            check()
            self._within_time(state)

        parsing = BatchParsing(wanted, list(parse), parsers.start(list(parse.values()), checked), known, self.cache, stats)
        del parse, contents  # with the parsing started, the bytes are the processes' (or parsed already)
        if previous is not None:
            previous.finish()
        return parsing


class BatchParsing:
    """A batch of files whose facts are being parsed: ``finish`` waits for them, gives each record its facts and
    caches the new ones."""

    def __init__(self, wanted, keys: list, parsing, known, cache, stats):
        self.wanted, self.keys, self.parsing = wanted, keys, parsing  # keys: (sha256, extractor key), in parsing order
        self.known, self.cache, self.stats = known, cache, stats

    def finish(self) -> None:
        found = dict(zip(self.keys, self.parsing.texts()))
        self.stats["parsed"] += len(found)
        self.stats["cached"] += len(self.wanted) - len(found)
        self.known.update(found)  # the next batch's files of the same contents take their facts from here
        for record, extractor, _ in self.wanted:
            record.facts = self.known[(record.sha256, extractor.key)]
        self.cache.put_many(found)
