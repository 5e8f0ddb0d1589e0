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
import json
import tempfile
import unicodedata
from collections.abc import Iterator
from itertools import groupby
from operator import itemgetter

import orjson


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

    def __len__(self) -> int:
        """Return how many facts (nodes and edges) are held."""
        return len(self._nodes) + len(self._edges)

    def build(self) -> tuple[list, list]:
        """Return ``(nodes, edges)`` in their canonical order."""
        # Sorted by key alone: the keys are unique, and comparing (key, value) pairs costs three times as much.
        nodes = [
            {"id": node_id, "kind": kind, "attrs": attrs, "evidence": _evidence(evidence)}
            for node_id, (kind, attrs, evidence) in sorted(self._nodes.items(), key=_first)
        ]
        edges = [
            {"src": key[0], "kind": key[1], "dst": key[2], "attrs": attrs, "evidence": _evidence(evidence)}
            for key, (attrs, evidence) in sorted(self._edges.items(), key=_first)
        ]
        return nodes, edges


    def write_run(self, nodes, edges) -> None:
        """Write the facts held, in canonical order, to the files ``nodes`` and ``edges``: one JSON line a fact."""
        for node_id, (kind, attrs, evidence) in sorted(self._nodes.items(), key=_first):
            nodes.write(_row([node_id, kind, attrs, sorted(evidence)]))
        for key, (attrs, evidence) in sorted(self._edges.items(), key=_first):
            edges.write(_row([key[0], key[1], key[2], attrs, sorted(evidence)]))


def _row(value: list) -> bytes:
    """Return one line of a run. orjson reads an integer past 64 bits back as a float, so it writes none: such a
    row is written by the standard library's encoder, after a space that tells the reader to use it too."""
    try:
        return orjson.dumps(value, option=orjson.OPT_APPEND_NEWLINE)
    except orjson.JSONEncodeError:
        return b" " + json.dumps(value, separators=(",", ":")).encode() + b"\n"


def _evidence(items) -> list:
    ordered = sorted(items) if len(items) > 1 else items
    return [{"path": path, "lines": [first, last], "extractor": extractor} for path, first, last, extractor in ordered]


def _lines(run) -> Iterator[list]:
    run.seek(0)
    for line in run:
        yield json.loads(line) if line[0] == 0x20 else orjson.loads(line)


def _node_key(row: list) -> str:
    return row[0]


def _edge_key(row: list) -> tuple:
    return row[0], row[1], row[2], _key(row[3])


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
        merged = heapq.merge(*(_lines(nodes) for nodes, _ in self.runs), key=_node_key)
        for node_id, rows in groupby(merged, key=_node_key):
            _, kind, attrs, evidence = next(rows)
            evidence = set(map(tuple, evidence))
            for other in rows:
                for key, value in other[2].items():
                    attrs.setdefault(key, value)
                evidence.update(map(tuple, other[3]))
            yield {"id": node_id, "kind": kind, "attrs": attrs, "evidence": _evidence(evidence)}

    def _edges(self) -> Iterator[dict]:
        merged = heapq.merge(*(_lines(edges) for _, edges in self.runs), key=_edge_key)
        for _, rows in groupby(merged, key=_edge_key):
            src, kind, dst, attrs, evidence = next(rows)
            evidence = set(map(tuple, evidence))
            for other in rows:
                evidence.update(map(tuple, other[4]))
            yield {"src": src, "kind": kind, "dst": dst, "attrs": attrs, "evidence": _evidence(evidence)}

    def close(self) -> None:
        for files in self.runs:
            for run in files:
                run.close()
        self.runs = []

