"""What every family of the linker is, and the pieces several families share."""

import posixpath
from collections.abc import Iterator, Sequence

from ..extractors import INVENTORY_VERSION
from ..graph import GraphBuilder
from ..records import FileRecord

INVENTORY = f"inventory@{INVENTORY_VERSION}"  # the extractor named by the facts the pipeline records itself


class Family:
    """One kind of fact's linking. Every hook is optional: the defaults read nothing and emit nothing.

    ``records`` are the analysis' files, in path order. A family that needs another is given it, never the linker:
    a family that referred back to the linker that holds it would make a reference cycle, and the worker pauses
    the cycle collector for a whole attempt, so all the families learnt (and every record) would outlive the link.
    """

    def __init__(self, records: Sequence[FileRecord]):
        self.records = records

    def reads(self, record: FileRecord) -> bool:
        """Return whether ``learn`` must see this file's facts."""
        return False

    def learn(self, record: FileRecord, facts: dict) -> None:
        """Take in what the whole listing must tell before any file is emitted."""

    def learned(self) -> None:
        """Conclude from everything learnt (called once, after the last ``learn``)."""

    def learnt(self):
        """Return, as JSON-ready values, all that ``emit`` depends on besides the file it is given.

        Two analyses whose families learnt the same emit the same facts for the same file: a re-analysis relies on
        it to re-emit only the files that changed (``splice.py``).
        """
        return None

    def emit(self, record: FileRecord, facts: dict, graph: GraphBuilder) -> None:
        """Add this file's nodes and edges to ``graph``."""

    def finish(self, graph: GraphBuilder) -> None:
        """Add what needs every file, after the last one was emitted."""


def extractor_name(record: FileRecord) -> str:
    return record.extractor.partition("@")[0]


def is_module_file(record: FileRecord, languages: Sequence[str], extractors: Sequence[str]) -> bool:
    """Return whether the record is a module of one of ``languages``: a file one of ``extractors`` read, or a text
    file that none read (too large, minified): imports resolve to it all the same. A file another extractor
    reads (``setup.py``, a manifest) is none, and neither is a binary file."""
    return record.kind == "file" and record.language in languages and not record.binary and (
        not record.extractor or extractor_name(record) in extractors)


def folders_above(path: str) -> Iterator[str]:
    """Yield the folder of ``path`` and each one above it, nearest first, the root ("") last."""
    folder = posixpath.dirname(path)
    while True:
        yield folder
        if not folder:
            return
        folder = posixpath.dirname(folder)


def evidence(record: FileRecord, first: int, last: int | None = None) -> tuple:
    return (record.path, first, first if last is None else last, record.extractor)


def whole_file(record: FileRecord) -> tuple:
    """Return evidence spanning the file: its extractor's, or the inventory's when none read it (too large, minified)."""
    return (record.path, 1, max(1, record.lines), record.extractor or INVENTORY)


def service_calls(graph: GraphBuilder, module_id: str, record: FileRecord, facts: dict) -> None:
    """Add a ``calls`` edge from ``module_id`` to a ``svc:`` node for each outbound HTTP call the file makes."""
    for client, method, host, url, line in facts.get("calls", ()):
        service = graph.node(f"svc:{host}", "service", {"host": host})
        graph.edge(module_id, "calls", service, {"client": client, "method": method, "url": url}, evidence(record, line))
