"""
Linking: from each file's cached, path-independent facts to one graph, where paths and the other files matter.

Each kind of fact is linked by one family, a module of this package: ``inventory`` (files, the repository,
diagnostics), ``dependencies`` (declared and locked dependencies: a dependency is direct when a manifest declares
it or a lockfile's root depends on it, transitive when only locked), ``python`` (module names, imports resolved to
an in-repository module, the standard library or a distribution), ``javascript`` (modules, imports matched to
files or packages, exports) and ``iac`` (images, compose services, Terraform blocks).

The files are gone through twice, in path order. ``learn`` first shows each family the files it needs to know
about before any fact is emitted (the Python paths to name modules, the manifests to know what is declared);
``batches`` then has every family turn each file's facts into nodes and edges, one batch of files at a time, so
that only one batch's facts are decoded at once; last, each family's ``finish`` adds what needs every file (the
repository node, the dependency nodes). The graph builder merges what two files report of one node, so the
result depends only on the files, never on how they were batched.
"""

from collections.abc import Iterator, Sequence
from itertools import islice

from ..graph import GraphBuilder
from ..records import FileRecord
from .dependencies import Dependencies
from .iac import Iac
from .inventory import Inventory
from .javascript import JavaScript
from .python import Python


class Linker:
    """The families of one analysis, over its records sorted by path."""

    def __init__(self, records: Sequence[FileRecord]):
        self.records = sorted(records, key=lambda record: record.path)
        self.inventory = Inventory(self)
        self.dependencies = Dependencies(self)
        self.python = Python(self)
        self.javascript = JavaScript(self)
        self.iac = Iac(self)
        self.families = (self.inventory, self.dependencies, self.python, self.javascript, self.iac)

    def learn(self) -> None:
        """Show each family the files it reads before emitting (decoding each file's facts once at most)."""
        for record in self.records:
            facts = None
            for family in self.families:
                if family.reads(record):
                    if facts is None:
                        facts = record.decoded()
                    family.learn(record, facts)
        for family in self.families:
            family.learned()

    def batches(self, size: int) -> Iterator[GraphBuilder]:
        """Yield the graph of each batch of ``size`` files in path order, then one of what needs every file."""
        records = iter(self.records)
        while batch := list(islice(records, size)):
            graph = GraphBuilder()
            for record in batch:
                facts = record.decoded()
                for family in self.families:
                    family.emit(record, facts, graph)
            yield graph
        graph = GraphBuilder()
        for family in self.families:
            family.finish(graph)
        yield graph

    def link(self) -> GraphBuilder:
        """Return the whole graph in one builder (for sources small enough to hold it at once)."""
        self.learn()
        whole = GraphBuilder()
        for graph in self.batches(len(self.records) or 1):
            whole.absorb(graph)
        return whole
