"""
The ``ri.v1`` document, written as canonical JSON a piece at a time from a graph's ordered nodes and edges.

Canonical JSON is compositional: a list's text is its elements' texts joined by commas, and an object's is its
members' in key order. So the document is the same bytes whether it is encoded whole or, as here, a batch of
elements at a time (``edges``, ``extractors``, ``nodes``, ``schema`` and ``summary``, in that key order), and the
summary is counted as the elements go by and written last. Nothing but one batch is held at once.

The writer keeps an index of what it wrote: for each batch of elements, the key of its first one and where its
text lies in the document. A re-analysis reads the document back through that index (``splice.py``).
"""

from collections.abc import Callable, Iterable, Iterator

from .canonical import canonical_bytes
from .summary import Summary

BATCH = 1000  # elements encoded per call: orjson's speed and its checks are per call, not per element
SECTIONS = ("edges", "nodes")


def node_key(node: dict) -> str:
    """Return the key nodes are ordered by (their id)."""
    return node["id"]


def edge_key(edge: dict) -> tuple:
    """Return the key edges are ordered by, as ``GraphBuilder`` orders them: source, kind, target, attributes."""
    return (edge["src"], edge["kind"], edge["dst"], tuple(sorted(edge["attrs"].items())))


KEYS = {"edges": edge_key, "nodes": node_key}


def header(extractors: dict) -> tuple[bytes, bytes]:
    """Return the text before the edges and the text between the edges and the nodes."""
    return b'{"edges":[', b'],"extractors":' + canonical_bytes(extractors) + b',"nodes":['


def tail(schema: str, summary: Summary) -> bytes:
    return b'],"schema":' + canonical_bytes(schema) + b',"summary":' + canonical_bytes(summary.result()) + b"}"


class DocumentWriter:
    """Yields a document's bytes and indexes its pieces: ``index[section]`` is ``[(first key, offset, length)]``."""

    def __init__(self):
        self.offset = 0
        self.index: dict[str, list[tuple]] = {section: [] for section in SECTIONS}

    def raw(self, data: bytes) -> bytes:
        self.offset += len(data)
        return data

    def piece(self, section: str, first_key, text) -> Iterator[bytes]:
        """Yield the elements' ``text`` (without brackets) as the next piece of ``section``, after a comma unless first."""
        if self.index[section]:
            yield self.raw(b",")
        self.index[section].append((first_key, self.offset, len(text)))
        yield self.raw(text)

    def elements(self, section: str, batch: list[dict]) -> Iterator[bytes]:
        """Yield ``batch`` (in canonical order) as pieces of ``section``, ``BATCH`` elements at most to each."""
        key = KEYS[section]
        for start in range(0, len(batch), BATCH):
            part = batch[start : start + BATCH]
            yield from self.piece(section, key(part[0]), memoryview(canonical_bytes(part))[1:-1])


def _batches(items: Iterable[dict], count: Callable[[dict], None]) -> Iterator[list]:
    batch = []
    for item in items:
        count(item)
        batch.append(item)
        if len(batch) == BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def write_document(schema: str, extractors: dict, nodes: Iterable[dict], edges: Iterable[dict], summary: Summary,
                   writer: DocumentWriter | None = None) -> Iterator[bytes]:
    """Yield the canonical JSON of ``{"schema", "extractors", "nodes", "edges", "summary"}`` in pieces.

    ``nodes`` and ``edges`` must be in canonical order with NFC strings (as ``GraphBuilder`` gives them); the
    summary is complete once the last piece has been asked for, and so is ``writer``'s index.
    """
    writer = writer or DocumentWriter()
    before, between = header(extractors)
    yield writer.raw(before)
    for batch in _batches(edges, summary.edge):
        yield from writer.elements("edges", batch)
    yield writer.raw(between)
    for batch in _batches(nodes, summary.node):
        yield from writer.elements("nodes", batch)
    yield writer.raw(tail(schema, summary))
