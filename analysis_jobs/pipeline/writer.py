"""
The ``ri.v1`` document, written as canonical JSON a piece at a time from a graph's ordered nodes and edges.

Canonical JSON is compositional: a list's text is its elements' texts joined by commas, and an object's is its
members' in key order. So the document is the same bytes whether it is encoded whole or, as here, a batch of
elements at a time (``edges``, ``extractors``, ``nodes``, ``schema`` and ``summary``, in that key order), and the
summary is counted as the elements go by and written last. Nothing but one batch is held at once.
"""

from collections.abc import Callable, Iterable, Iterator

from .canonical import canonical_bytes
from .summary import Summary

BATCH = 1000  # elements encoded per call: orjson's speed and its checks are per call, not per element


def _inner(batch: list, first: bool) -> bytes:
    """Return the elements of ``batch`` as they stand in a list's text: without its brackets, after a comma unless ``first``."""
    return (b"" if first else b",") + memoryview(canonical_bytes(batch))[1:-1]


def _elements(items: Iterable[dict], count: Callable[[dict], None]) -> Iterator[bytes]:
    batch, first = [], True
    for item in items:
        count(item)
        batch.append(item)
        if len(batch) == BATCH:
            yield _inner(batch, first)
            batch, first = [], False
    if batch:
        yield _inner(batch, first)


def write_document(schema: str, extractors: dict, nodes: Iterable[dict], edges: Iterable[dict], summary: Summary) -> Iterator[bytes]:
    """Yield the canonical JSON of ``{"schema", "extractors", "nodes", "edges", "summary"}`` in pieces.

    ``nodes`` and ``edges`` must be in canonical order with NFC strings (as ``GraphBuilder`` gives them); the
    summary is complete once the last piece has been asked for.
    """
    yield b'{"edges":['
    yield from _elements(edges, summary.edge)
    yield b'],"extractors":' + canonical_bytes(extractors) + b',"nodes":['
    yield from _elements(nodes, summary.node)
    yield b'],"schema":' + canonical_bytes(schema) + b',"summary":' + canonical_bytes(summary.result()) + b"}"
