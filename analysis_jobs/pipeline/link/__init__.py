"""
Linking: from each file's cached, path-independent facts to one graph, where paths and the other files matter.

Each kind of fact is linked by one family, a module of this package: ``inventory`` (files, the repository,
diagnostics), ``dependencies`` (declared and locked dependencies: a dependency is direct when a manifest declares
it or a lockfile's root depends on it, transitive when only locked), ``python`` (module names, imports resolved to
an in-repository module, the standard library or a distribution), ``javascript`` (modules, imports matched to
files or packages, exports) and ``iac`` (images, compose services, Terraform blocks).

The files are gone through twice, in path order. ``learn`` first shows each family the files it needs to know
about before any fact is emitted (the Python paths to name modules, the manifests to know what is declared);
``link`` then has every family turn each file's facts into nodes and edges, one batch of files at a time, so
that only one batch's facts are decoded at once, into ``GraphRuns`` (which writes a full builder out as a sorted
run); last, each family's ``finish`` adds what needs every file (the repository node, the dependency nodes).
The graph merges what two files report of one node, so the result depends only on the files, never on how they
were batched.
"""

import hashlib
import json
from collections.abc import Sequence

from ..graph import GraphBuilder, GraphRuns
from ..records import FileRecord
from .dependencies import Dependencies
from .iac import Iac
from .inventory import Inventory
from .javascript import JavaScript
from .python import Python


# Moves when the same per-file facts link to different facts, so that no snapshot sealed by the old linking is
# reused by identity; the per-file facts stay cached. 2: private modules (``_billiard``) link to the distribution
# of their public name, and ``__pypy__`` and Python 2's ``dummy_thread`` to the standard library. 3: more of
# Python 2's standard library (``_winreg``, ``_abcoll``, ``ttk``...), import names such as ``socks``
# (``pysocks``) and ``_distutils_hack`` (``setuptools``), namespace distributions named for two components
# (``zope.interface``), a file too large to read, or minified, as a module that imports resolve to (not a
# missing one), and requirements files at any depth of a ``requirements`` folder, ``extras/`` ones scoped
# ``optional:NAME``, and a dotted import to the declared distribution its longest prefix names
# (``azure.storage.queue``), found analysing pip's, setuptools', pytest's, Playwright's, celery's and kombu's sources.
# 4: namespaces of more than one component (``google.cloud.storage``), ``from google import genai`` as the
# ``google-genai`` module, OpenTelemetry's API modules, and more import names (``cog``, ``xdist``, ``factory``),
# found analysing sentry-sdk's, coverage's and black's sources. 5: a relative JS import of an asset
# (``./data.json``, ``./App.css``, ``./Button.vue``) goes to that file, not to a missing module. 6: an import of
# a workspace package's subpath (``@repo/ui/button``) goes where its ``exports`` map it (``./src/button.tsx``).
# 7: a dependency says whether it is ``in_repository`` (a manifest in the tree is that package). 8: of the
# tsconfig ``paths`` aliases that cover an import, the one with the longest prefix maps it, as TypeScript does,
# not the first in the file. 9: Node's subpath imports (``#config``) go where the ``imports`` of the nearest
# ``package.json`` map them, never to an npm dependency named ``#config``. 10: ``./x.cjs`` and ``./x.mjs`` are
# also ``x.d.cts`` and ``x.d.mts``, as TypeScript resolves them. 11: a file the build writes (a tsconfig's
# ``outDir``) and the tree lacks is the source it is built from (``rootDir``), and a specifier that is no npm
# name (a template's ``{{name}}``) is a missing module, not a dependency, found analysing jupyterlab's source.
# 12: SvelteKit's ``$lib`` is its project's ``src/lib``, and ``$app``, ``$env`` are ``@sveltejs/kit``; an import's
# query (Vite's ``?raw``) is not part of the file's name, found analysing gradio's source. 13: the ``paths`` of
# every tsconfig in a folder apply (``tsconfig.app.json`` and ``tsconfig.json``), not only the last one's, and
# they map a ``#name`` before the ``package.json`` ``imports`` do, as TypeScript resolves. 14: an npm
# dependency declared ``catalog:`` takes its range (and its ``catalog``) from the nearest ``pnpm-workspace.yaml``.
# 15: a declared distribution that installs another's import name (``phonenumberslite``, ``vat-moss-forked``,
# ``opencv-python-headless``) or the name without its hyphens (``mt-940``) is what the import is, and more import
# names are known (``oauth2_provider``, ``sass``), found analysing pretix's source. 16: a crate's ``{ workspace =
# true }`` takes its range from the workspace (and is the crate the workspace's key names, ``memmap2`` for
# ``memmap``), a Maven dependency with no version its parent's managed one, found analysing polars' source.
# 17: a NuGet reference with no version takes the central one of the nearest ``Directory.Packages.props``.
# 18: more import names (``upath``, ``antlr4``, ``grpc_health``), found analysing dagster's source. 19: a
# requirements file a pyproject builds its (optional) dependencies from takes the scope it gives (gradio's).
# 20: a compose service is ``built_from`` the Dockerfile its ``build`` names. 21: a go.mod's ``replace`` gives
# the declares edge of the module it replaces ``replaced_by``. 22: an import that only a namespace folder of the
# repository starts is the declared distribution of its name (ansible's ``packaging/`` scripts). 23: an absolute
# import of a module beside the importer, that nothing else is, is that module (sympy's ANTLR parser). 24: a
# ``paths`` alias that opens no file leaves the import to the packages (airflow's ``"*": ["./*"]``). 25: types
# imported from an undeclared package come from its declared ``@types`` package (eslint's ``estree``). 26: an
# ``apache-`` distribution is imported without the prefix (superset's ``apache-superset-core``). 27: ``npm:x`` and
# a CDN's URL of an npm package are that package (three's examples). 28: a project inside its package
# (label-studio's ``label_studio/manage.py``) imports the package's modules by their names below it (``core``).
# 29: a ``paths`` alias into ``node_modules`` imports the package there (panel's ``@bokehjs/*``). 30: Zope's
# ``Products`` and Plone's namespaces, and another distribution's portion of a namespace package the repository
# has a portion of (plone.api's ``plone.app.iterate``) is that distribution. 31: an ``exports`` or ``imports``
# target whose file the tree lacks yields to the next condition's (@babel/core's unshipped ``types``).
VERSION = "31"


class Linker:
    """The families of one analysis, over its records sorted by path."""

    def __init__(self, records: Sequence[FileRecord]):
        self.records = sorted(records, key=lambda record: record.path)
        self.inventory = Inventory(self.records)
        self.dependencies = Dependencies(self.records)
        self.python = Python(self.records, self.dependencies)
        self.javascript = JavaScript(self.records, self.dependencies)
        self.iac = Iac(self.records)
        self.families = (self.inventory, self.dependencies, self.python, self.javascript, self.iac)
        self.learnt = ""  # the digest of what the families learnt, once they have

    def learn(self) -> None:
        """Show each family the files it reads before emitting (decoding each file's facts once at most).

        ``learnt`` is then the digest of what they learnt: two analyses with the same one emit the same facts
        for the same file.
        """
        if self.learnt:
            return
        for record in self.records:
            facts = None
            for family in self.families:
                if family.reads(record):
                    if facts is None:
                        facts = record.decoded()
                    family.learn(record, facts)
        for family in self.families:
            family.learned()
        learnt = json.dumps([family.learnt() for family in self.families], separators=(",", ":"))
        self.learnt = hashlib.sha256(learnt.encode()).hexdigest()

    def emit(self, record: FileRecord, graph: GraphBuilder) -> None:
        """Report one file's facts into ``graph`` (once the families have learnt)."""
        facts = record.decoded()
        for family in self.families:
            family.emit(record, facts, graph)

    def link(self, runs: GraphRuns, *, batch: int = 256, check=lambda: None) -> None:
        """Report every file's facts into ``runs`` a batch of files at a time, then what needs every file.

        ``check`` is called between batches (it raises when the analysis must stop).
        """
        self.learn()
        for start in range(0, len(self.records), batch):
            graph = runs.graph
            for record in self.records[start : start + batch]:
                self.emit(record, graph)
            runs.checkpoint()
            check()
        for family in self.families:
            family.finish(runs.graph)
