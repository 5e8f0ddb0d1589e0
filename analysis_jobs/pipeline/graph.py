"""
The ``ri.v1`` facts graph: nodes and edges, each with its evidence, fully ordered and de-duplicated.

A node is ``{"id", "kind", "attrs", "evidence"}``; an edge is ``{"src", "kind", "dst", "attrs", "evidence"}``;
evidence is ``{"path", "lines": [first, last], "extractor"}`` with 1-based lines and the ``name@version`` of the
extractor that saw it. The same node (or the same edge with the same attributes) reported twice is one fact
whose evidence is the union, so the output depends only on what was found, never on the order it was found in.

A big source's graph does not have to be held at once: ``GraphRuns`` builds it a batch of files at a time,
writes each full builder out as a sorted run to a temporary file, and merges the runs back in order, one element
of each at a time (an external merge sort). Only the run being built is in memory, so the memory an analysis
needs is bounded by the run size, not by the size of the source.
"""

import heapq
import marshal
import tempfile
import unicodedata
from collections.abc import Iterator
from itertools import groupby, islice
from operator import itemgetter


def nfc(text: str) -> str:
    """Return ``text`` as a fact holds it: in NFC, and with any lone surrogate written as its escape.

    A Python or JSON string literal can spell a lone surrogate (``"\\ud800"``); no UTF-8 text can hold one.
    """
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return unicodedata.normalize("NFC", text)


def _attrs(attrs: dict) -> dict:
    clean = {}
    for key, value in attrs.items():
        if isinstance(value, str):
            if not value.isascii():
                value = nfc(value)
        elif isinstance(value, float):
            raise TypeError("facts hold no floats")
        clean[key] = value
    return clean


_first = itemgetter(0)
BLOCK = 1000  # rows of a run written (and read back) at once
# Version 2 writes each object whole; the later ones look every object up in a table to write repeats as
# references, which made writing a run slower than the orjson lines it replaced (best of 5: 2.2-2.6 s against
# 1.5-2.7 for 820,000 facts; 1.7-1.8 s at version 2).
MARSHAL_VERSION = 2


def _key(attrs: dict) -> tuple:
    # Keys are unique, so sorting never compares two values (which may be of different types).
    return tuple(sorted(attrs.items())) if attrs else ()


class GraphBuilder:
    """Facts as they are reported, merged; ``build`` orders them. Strings are made NFC as they arrive."""

    def __init__(self):
        self._nodes: dict[str, tuple[str, dict, set]] = {}
        self._edges: dict[tuple, tuple[dict, set]] = {}

    def node(self, node_id: str, kind: str, attrs: dict | None = None, evidence: tuple | None = None) -> str:
        """Add (or merge into) node ``node_id``; ``evidence`` is ``(path, first, last, extractor)``."""
        if not node_id.isascii():
            node_id = nfc(node_id)
        found = self._nodes.get(node_id)
        if found is None:
            found = self._nodes[node_id] = (kind, _attrs(attrs) if attrs else {}, set())
        elif attrs:
            merged = found[1]
            for key, value in _attrs(attrs).items():
                merged.setdefault(key, value)  # first report wins; reports arrive in path order
        if evidence is not None:
            found[2].add(evidence if evidence[0].isascii() else (nfc(evidence[0]), *evidence[1:]))
        return node_id

    def has_node(self, node_id: str) -> bool:
        return node_id in self._nodes

    def edge(self, src: str, kind: str, dst: str, attrs: dict | None = None, evidence: tuple | None = None) -> None:
        attrs = _attrs(attrs) if attrs else {}
        key = (src if src.isascii() else nfc(src), kind, dst if dst.isascii() else nfc(dst), _key(attrs))
        found = self._edges.get(key)
        if found is None:
            found = self._edges[key] = (attrs, set())
        if evidence is not None:
            found[1].add(evidence if evidence[0].isascii() else (nfc(evidence[0]), *evidence[1:]))

    def node_element(self, node_id: str) -> dict | None:
        """Return node ``node_id`` as the document holds it, or None if none was reported."""
        found = self._nodes.get(node_id)
        if found is None:
            return None
        return _node(node_id, *found)

    def edge_elements(self) -> dict[tuple, dict]:
        """Return every edge as the document holds it, by its key (unordered)."""
        return {key: _edge(key, attrs, evidence) for key, (attrs, evidence) in self._edges.items()}

    def node_ids(self):
        return self._nodes.keys()

    def __len__(self) -> int:
        """Return how many facts (nodes and edges) are held."""
        return len(self._nodes) + len(self._edges)

    def build(self) -> tuple[list, list]:
        """Return ``(nodes, edges)`` in their canonical order."""
        # Sorted by key alone: the keys are unique, and comparing (key, value) pairs costs three times as much.
        nodes = [_node(node_id, *found) for node_id, found in sorted(self._nodes.items(), key=_first)]
        edges = [_edge(key, attrs, evidence) for key, (attrs, evidence) in sorted(self._edges.items(), key=_first)]
        return nodes, edges

    def write_run(self, nodes, edges) -> None:
        """Write the facts held, in canonical order, to the files ``nodes`` and ``edges`` (see ``_write_rows``).

        An edge's row holds its attributes as the sorted pairs it is keyed by; a fact's evidence is left a set,
        to be sorted once, when the runs are merged.
        """
        _write_rows(nodes, ((node_id, kind, attrs, evidence) for node_id, (kind, attrs, evidence) in sorted(self._nodes.items(), key=_first)))
        _write_rows(edges, ((*key, evidence) for key, (_, evidence) in sorted(self._edges.items(), key=_first)))


def _write_rows(run, rows: Iterator[tuple]) -> None:
    """Write ``rows`` to the file ``run`` in blocks of ``BLOCK``, each its length and then its ``marshal`` bytes.

    A run is read back only by the process that wrote it, so the interpreter's own format serves: it keeps
    tuples and sets as they are, integers of any size, and costs one call a block, not one a fact.
    """
    while block := tuple(islice(rows, BLOCK)):
        data = marshal.dumps(block, MARSHAL_VERSION)
        run.write(len(data).to_bytes(4, "little"))
        run.write(data)


def _rows(run) -> Iterator[tuple]:
    run.seek(0)
    while header := run.read(4):
        yield from marshal.loads(run.read(int.from_bytes(header, "little")))


def _evidence(items) -> list:
    ordered = sorted(items) if len(items) > 1 else items
    return [{"path": path, "lines": [first, last], "extractor": extractor} for path, first, last, extractor in ordered]


def _node(node_id: str, kind: str, attrs: dict, evidence) -> dict:
    """Return a node as the document holds it."""
    return {"id": node_id, "kind": kind, "attrs": attrs, "evidence": _evidence(evidence)}


def _edge(key: tuple, attrs: dict, evidence) -> dict:
    """Return the edge keyed ``(src, kind, dst, ...)`` as the document holds it."""
    return {"src": key[0], "kind": key[1], "dst": key[2], "attrs": attrs, "evidence": _evidence(evidence)}


_edge_key = itemgetter(0, 1, 2, 3)


class GraphRuns:
    """A graph built a batch at a time: ``graph`` is the builder to report into; ``checkpoint`` after each batch.

    A builder holding more than ``limit`` facts at a checkpoint is written out as a sorted run and a fresh one
    started; ``build`` then merges the runs. A graph that never outgrew the limit is built from memory alone.
    Runs are written to ``directory`` (the system's temporary folder by default) and deleted by ``close``.
    """

    def __init__(self, limit: int = 100_000, directory: str | None = None):
        self.limit = limit
        self.directory = directory
        self.graph = GraphBuilder()
        self.runs: list[tuple] = []  # (nodes file, edges file), in the order they were reported

    def checkpoint(self) -> None:
        if len(self.graph) > self.limit:
            self._spill()

    def _spill(self) -> None:
        nodes, edges = (tempfile.TemporaryFile(dir=self.directory) for _ in range(2))
        self.graph.write_run(nodes, edges)
        self.runs.append((nodes, edges))
        self.graph = GraphBuilder()

    def build(self) -> tuple[Iterator[dict], Iterator[dict]]:
        """Return the nodes and the edges, each an iterator in canonical order."""
        if not self.runs:
            nodes, edges = self.graph.build()
            return iter(nodes), iter(edges)
        if len(self.graph):
            self._spill()
        return self._nodes(), self._edges()

    def _nodes(self) -> Iterator[dict]:
        # heapq.merge is stable: of equal keys, the earlier run's row comes first, so its attributes win.
        merged = heapq.merge(*(_rows(nodes) for nodes, _ in self.runs), key=_first)
        for node_id, rows in groupby(merged, key=_first):
            _, kind, attrs, evidence = next(rows)
            for other in rows:
                for key, value in other[2].items():
                    attrs.setdefault(key, value)
                evidence |= other[3]
            yield _node(node_id, kind, attrs, evidence)

    def _edges(self) -> Iterator[dict]:
        merged = heapq.merge(*(_rows(edges) for _, edges in self.runs), key=_edge_key)
        for (src, kind, dst, attrs), rows in groupby(merged, key=_edge_key):
            evidence = next(rows)[4]
            for other in rows:
                evidence |= other[4]
            yield _edge((src, kind, dst), dict(attrs), evidence)

    def close(self) -> None:
        for files in self.runs:
            for run in files:
                run.close()
        self.runs = []

