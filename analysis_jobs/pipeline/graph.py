"""
The ``ri.v1`` facts graph: nodes and edges, each with its evidence, fully ordered and de-duplicated.

A node is ``{"id", "kind", "attrs", "evidence"}``; an edge is ``{"src", "kind", "dst", "attrs", "evidence"}``;
evidence is ``{"path", "lines": [first, last], "extractor"}`` with 1-based lines and the ``name@version`` of the
extractor that saw it. The same node (or the same edge with the same attributes) reported twice is one fact
whose evidence is the union, so the output depends only on what was found, never on the order it was found in.
"""

import unicodedata
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

    def absorb(self, other: "GraphBuilder") -> None:
        """Merge ``other``'s facts into these, as if they had been reported here after everything else."""
        for node_id, (kind, attrs, evidence) in other._nodes.items():
            found = self._nodes.get(node_id)
            if found is None:
                self._nodes[node_id] = (kind, attrs, evidence)
                continue
            for key, value in attrs.items():
                found[1].setdefault(key, value)
            found[2].update(evidence)
        for key, (attrs, evidence) in other._edges.items():
            found = self._edges.get(key)
            if found is None:
                self._edges[key] = (attrs, evidence)
            else:
                found[1].update(evidence)

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


def _evidence(items: set) -> list:
    ordered = sorted(items) if len(items) > 1 else items
    return [{"path": path, "lines": [first, last], "extractor": extractor} for path, first, last, extractor in ordered]
