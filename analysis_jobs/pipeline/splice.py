"""
Re-analysis by splicing: the document of a tree that changed in a few files, made from the last one's.

Every sealed document of the repository pipeline leaves a *basis* beside it: the records of the files it was
made from (path, size, content hash, extractor, ...), the digest of what the linker's families learnt from the
whole listing (``Linker.learnt``), the index its writer kept (each piece's first key and where its text lies) and
its summary's counts. A later analysis of the same source, with the same schema, extractors, linking and
settings (the same *lineage*), whose families learnt the same, emits the same facts as before for every file that
did not change. So only the changed files are emitted, as they were (their old facts are in the facts cache)
and as they are now, and the old document is read back and written out with those files' elements replaced:
a piece of it that holds none of them is copied as it is, byte for byte, and the others are decoded, patched
and encoded again. The result is the document a full link would write, byte for byte; only the work differs.

What an element is made of decides what is patched:

- An edge belongs to the one file that emits its source (a module, a file, a compose service, a CI job, a
  Kubernetes object): the changed files' edges before are taken out, theirs now put in.
- A node may be reported by several files, and what each reports is merged in path order (``GraphBuilder``).
  Every report that carries evidence names its file, so a node a changed file reported is made again from the
  changed files and from the unchanged files its old evidence names, in path order. A node reported without
  evidence (an image, a service host, a standard-library module, a missing module) has attributes that follow
  from its id, and it exists while an edge points at it: the old document's edges to it are counted.
- A dependency's node comes from what was learnt (unchanged) or from the imports pointing at it (counted).
- The repository's node and the summary are counted again from the records and the patched elements.

A splice is tried only when the families learnt the same and the changed files' facts fit in the memory a
full link's builder may hold; otherwise the analysis links in full, as it would without a basis.
"""

import bisect
import json
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from enum import StrEnum

import orjson

from .graph import GraphBuilder
from .records import FileRecord
from .summary import Summary
from .writer import KEYS, DocumentWriter, header, tail

RECORD_FIELDS = ("path", "kind", "size", "sha256", "binary", "lines", "language", "extractor", "skipped", "inside")
DEPENDENCY = "dep:"
REPOSITORY = "repo:"


def signature(record: FileRecord) -> tuple:
    """Return what a record says of its file: equal signatures, equal facts (the facts follow the content hash)."""
    return tuple(getattr(record, name) for name in RECORD_FIELDS)


def _dumps(value) -> bytes:
    try:
        return orjson.dumps(value)
    except orjson.JSONEncodeError:  # an integer past 64 bits, in an edge's attributes
        return json.dumps(value, separators=(",", ":")).encode()


def _edge_key(value: list) -> tuple:
    src, kind, dst, attrs = value
    return (src, kind, dst, tuple(tuple(pair) for pair in attrs))


@dataclass(frozen=True, slots=True)
class Basis:
    """What a sealed document was made from and how it was written: what the next analysis splices from."""

    snapshot_id: int
    records: list[tuple]  # signatures, in path order
    learnt: str
    index: dict[str, list[tuple]]  # by section: (first key, offset, length) of each piece
    summary: dict  # ``Summary.state()``

    def encode(self) -> bytes:
        columns = dict(zip(RECORD_FIELDS, map(list, zip(*self.records)))) if self.records else {}
        value = {"records": columns, "learnt": self.learnt, "index": self.index, "summary": self.summary}
        return zlib.compress(_dumps(value), 1)

    @classmethod
    def decode(cls, snapshot_id: int, data: bytes) -> "Basis":
        value = json.loads(zlib.decompress(data))
        columns = value["records"]
        records = list(zip(*(columns[name] for name in RECORD_FIELDS))) if columns else []
        index = {
            "edges": [(_edge_key(key), offset, length) for key, offset, length in value["index"]["edges"]],
            "nodes": [(key, offset, length) for key, offset, length in value["index"]["nodes"]],
        }
        return cls(snapshot_id, records, value["learnt"], index, value["summary"])


class Relink(StrEnum):
    """Why an analysis links in full: what a log line names, so that a slow re-analysis explains itself."""

    NO_BASIS = "no-basis"  # no sealed analysis of this lineage left one (the first, or its settings changed)
    LEARNT = "learnt-changed"  # the families learnt something else (a path or manifest moved): any file may differ
    PRUNED = "facts-pruned"  # the changed files' old facts were pruned from the cache since
    TOO_MANY = "too-many-changes"  # the changed files' facts outgrow what a full link's builder may hold


@dataclass
class Plan:
    """What changed since the basis, emitted both ways, and what the document's patch follows from."""

    basis: Basis
    changed: set[str]  # paths whose record differs, either way
    now: list[FileRecord]  # the changed files as they are (with their facts), in path order
    after: GraphBuilder  # what they emit now
    edges: dict[tuple, dict | None]  # each changed file's edge, before or now: what it is now (None: gone)
    nodes: set[str]  # the nodes a changed file reported, before or now, and the others that may follow
    pointed: set[str]  # what the changed files' edges point at now
    counted: set[str]  # nodes that exist while an edge points at them, and at which no changed file's edge does now
    delta: Counter  # by target: edges now less edges before, of the changed files


def plan(basis: Basis, linker, records: list[FileRecord], cache, limit: int) -> Plan | Relink:
    """Return how to splice ``basis``'s document into this analysis's, or why it must be linked in full.

    ``linker`` has learnt from ``records``; ``cache`` holds the facts the changed files had before.
    """
    if linker.learnt != basis.learnt:
        return Relink.LEARNT
    old = {fields[0]: fields for fields in basis.records}
    new = {record.path: record for record in records}
    before_records = [FileRecord(**dict(zip(RECORD_FIELDS, fields))) for path, fields in old.items()
                      if path not in new or signature(new[path]) != fields]
    now = [record for path, record in new.items() if path not in old or old[path] != signature(record)]
    wanted = {(record.sha256, record.extractor) for record in before_records if record.extractor}
    facts = cache.get_many(wanted) if wanted else {}
    if len(facts) < len(wanted):
        return Relink.PRUNED
    before, after = GraphBuilder(), GraphBuilder()
    for changed, graph in ((before_records, before), (now, after)):
        for record in changed:  # in path order, as the basis and the linker hold them
            if record.extractor and record.facts is None:
                record.facts = facts[(record.sha256, record.extractor)]
            linker.emit(record, graph)
            if len(before) + len(after) > limit:
                return Relink.TOO_MANY
    old_edges, new_edges = before.edge_elements(), after.edge_elements()
    edges: dict[tuple, dict | None] = {**dict.fromkeys(old_edges), **new_edges}
    delta = Counter(key[2] for key in new_edges)
    delta.subtract(key[2] for key in old_edges)
    targets = {key[2] for key in edges if key[2].startswith(DEPENDENCY)}
    pointed = {key[2] for key in new_edges}
    unreported = {node_id for node_id in before.node_ids() if not before.node_element(node_id)["evidence"]}
    counted = (unreported | {target for target in targets if not linker.dependencies.known(target)}) - pointed
    nodes = {*before.node_ids(), *after.node_ids(), *targets, REPOSITORY}
    return Plan(basis, {*(record.path for record in before_records), *(record.path for record in now)},
                now, after, edges, nodes, pointed, counted, delta)


class _Reader:
    """Slices of a document given as its texts in order, asked for in order of their offsets."""

    def __init__(self, texts: Iterable[str]):
        self.texts = iter(texts)
        self.buffer = bytearray()
        self.start = 0  # the document offset of the buffer's first byte

    def slice(self, offset: int, length: int) -> bytes:
        end = offset + length
        while self.start + len(self.buffer) < end:
            self.buffer += next(self.texts).encode()
        at = offset - self.start
        data = bytes(self.buffer[at : at + length])
        del self.buffer[: at + length]
        self.start = end
        return data


class Splice:
    """Writes the spliced document: ``pieces`` yields it, and then ``writer`` holds its index, ``summary`` its counts."""

    def __init__(self, plan: Plan, linker, records: dict[str, FileRecord], texts: Iterable[str]):
        self.plan, self.linker, self.records = plan, linker, records
        self.reader = _Reader(texts)
        self.writer = DocumentWriter()
        self.summary = Summary.from_state(plan.basis.summary)
        self.patterns = {node_id: b'"dst":' + orjson.dumps(node_id) + b"," for node_id in plan.counted}
        self.pointing: Counter = Counter()  # old edges to each counted node

    def pieces(self, schema: str, extractors: dict) -> Iterator[bytes]:
        before, between = header(extractors)
        yield self.writer.raw(before)
        yield from self._section("edges", self.plan.edges, self.plan.edges.get, self._count, self.summary.edge)
        yield self.writer.raw(between)
        yield from self._section("nodes", self.plan.nodes, self._node, lambda text: None, self.summary.node)
        yield self.writer.raw(tail(schema, self.summary))

    def _count(self, text: bytes) -> None:
        for node_id, pattern in self.patterns.items():
            self.pointing[node_id] += text.count(pattern)

    def _section(self, section: str, keys: Iterable, resolve: Callable, scan: Callable, count: Callable) -> Iterator[bytes]:
        """Yield ``section``: its old pieces, each copied, or patched with what ``resolve`` says of the changed ``keys`` it holds."""
        key = KEYS[section]
        pieces = self.plan.basis.index[section]
        changed = sorted(keys)
        firsts = [first for first, _, _ in pieces]
        by_piece: dict[int, list] = {}
        for changed_key in changed:
            by_piece.setdefault(max(0, bisect.bisect_right(firsts, changed_key) - 1), []).append(changed_key)
        if not pieces:
            yield from self.writer.elements(section, self._patched([], changed, key, resolve, count))
        for number, (first, offset, length) in enumerate(pieces):
            text = self.reader.slice(offset, length)
            scan(text)
            if number not in by_piece:
                yield from self.writer.piece(section, first, text)
                continue
            # The standard library's decoder: orjson would read an integer past 64 bits back as a float.
            elements = self._patched(json.loads(b"[" + text + b"]"), by_piece[number], key, resolve, count)
            yield from self.writer.elements(section, elements)

    @staticmethod
    def _patched(elements: list[dict], keys: list, key: Callable, resolve: Callable, count: Callable) -> list[dict]:
        """Return ``elements`` (in order) with each of ``keys`` (sorted) resolved: replaced, added or taken out."""
        patched, pending = [], iter(keys)

        def take(wanted, old: dict | None):
            if old is not None:
                count(old, -1)
            if (new := resolve(wanted, old)) is not None:
                patched.append(new)
                count(new)
            return next(pending, None)

        want = next(pending, None)
        for element in elements:
            at = key(element)
            while want is not None and want < at:
                want = take(want, None)
            if want is not None and want == at:
                want = take(want, element)
            else:
                patched.append(element)
        while want is not None:
            want = take(want, None)
        return patched

    def _node(self, node_id: str, old: dict | None) -> dict | None:
        """Return node ``node_id`` as a full link would make it now (None: it is gone)."""
        plan = self.plan
        if node_id == REPOSITORY:
            graph = GraphBuilder()
            self.linker.inventory.finish(graph)
            return graph.node_element(node_id)
        unchanged = {evidence["path"] for evidence in old["evidence"]} - plan.changed if old else set()
        if unchanged:
            graph = GraphBuilder()
            for record in sorted([*(self.records[path] for path in unchanged), *plan.now], key=lambda record: record.path):
                self.linker.emit(record, graph)
            element = graph.node_element(node_id)
        else:
            element = plan.after.node_element(node_id)
        if element is not None:
            return element
        pointed = node_id in plan.pointed or node_id in plan.counted and self.pointing[node_id] + plan.delta[node_id] > 0
        if node_id.startswith(DEPENDENCY):
            if not (self.linker.dependencies.known(node_id) or pointed):
                return None
            graph = GraphBuilder()
            self.linker.dependencies.node(graph, node_id)
            return graph.node_element(node_id)
        if pointed:
            if old is None:
                raise AssertionError(f"{node_id} is pointed at but was not in the document spliced from")
            return old
        return None


class SnapshotBases:
    """The bases of sealed snapshots in the database, by lineage: one per lineage, its latest."""

    def __init__(self, using: str = "default", *, now=None):
        self.using = using
        self.now = now

    def latest(self, lineage: str) -> Basis | None:
        from ..models import SnapshotBasis, SnapshotState

        row = (SnapshotBasis.objects.using(self.using).filter(lineage=lineage, snapshot__state=SnapshotState.SEALED)
               .order_by("-snapshot_id").values_list("snapshot_id", "data").first())
        return None if row is None else Basis.decode(row[0], bytes(row[1]))

    def document(self, snapshot_id: int) -> Iterator[str]:
        from ..documents import DocumentStore

        return DocumentStore(self.using).iter(snapshot_id)

    def put(self, snapshot_id: int, lineage: str, basis: Basis, recorded_at) -> None:
        """Record the basis of sealed snapshot ``snapshot_id``; the older ones of its lineage are of no more use.

        Written out, bound on the server: the ORM would put megabytes of basis into the statement's text, which
        psycopg keeps (``cursors.py``).
        """
        from django.db import connections, transaction

        from ..cursors import server_binding
        from ..models import SnapshotBasis

        connection = connections[self.using]
        with transaction.atomic(using=self.using), server_binding(connection) as cursor:
            SnapshotBasis.objects.using(self.using).filter(lineage=lineage, snapshot_id__lt=snapshot_id).delete()
            cursor.execute(
                f"INSERT INTO {SnapshotBasis._meta.db_table} (snapshot_id, lineage, data, recorded_at) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT (snapshot_id) DO NOTHING",
                [snapshot_id, lineage, basis.encode(), connection.ops.adapt_datetimefield_value(recorded_at)],
            )


class MemoryBases:
    """``SnapshotBases`` in dicts, for analyses without a database: ``documents`` holds each sealed document."""

    def __init__(self):
        self.bases: dict[str, Basis] = {}
        self.documents: dict[int, str] = {}

    def latest(self, lineage):
        basis = self.bases.get(lineage)
        return None if basis is None else Basis.decode(basis.snapshot_id, basis.encode())

    def document(self, snapshot_id):
        yield self.documents[snapshot_id]

    def put(self, snapshot_id, lineage, basis, recorded_at):
        self.bases[lineage] = basis
