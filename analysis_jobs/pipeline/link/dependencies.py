"""Declared and locked dependencies: a ``declares``/``locks`` edge per manifest row, a node per dependency."""

import posixpath
import re

from ..extractors import DECLARING, PNPM_WORKSPACE
from .family import Family, evidence, extractor_name

_DEV_WORDS = re.compile(r"(^|[^a-z])(dev|test|tests|testing|lint|docs?|ci|bench)([^a-z]|$)")
_MANIFEST_NAMES = frozenset(extractor.name for extractor in DECLARING)


def requirements_scope(path: str) -> str:
    """Return the scope a requirements file's path gives its rows (``requirements-dev.txt``: dev).

    A file in an ``extras`` folder (celery's ``requirements/extras/redis.txt``) lists an extra's requirements:
    ``optional:redis``, as ``extras_require`` gives them in a ``setup.py``.
    """
    folders, _, name = path.lower().rpartition("/")
    if "extras" in folders.split("/"):
        return f"optional:{name.rsplit('.', 1)[0]}"
    return "dev" if _DEV_WORDS.search(path.lower()) else "main"


class Dependencies(Family):
    """A dependency is direct when a manifest declares it or a lockfile's root depends on it, transitive when only locked.

    ``imported`` is filled by the families that resolve imports to a dependency, so that an import of something
    neither declared nor locked still gets a node (an undeclared dependency). A dependency is ``in_repository``
    when a manifest in the tree is that package (its ``provides``: a workspace package, a sibling crate, the
    project's own distribution), so that a monorepo's own packages are not counted as what it depends on. An npm
    dependency declared from a pnpm catalog (``"react": "catalog:"``) takes its range from the catalogs of the
    nearest ``pnpm-workspace.yaml`` above its manifest, and says which catalog it came from.
    """

    def __init__(self, records):
        super().__init__(records)
        self.declared: set[str] = set()
        self.direct: set[str] = set()
        self.locked: set[str] = set()
        self.imported: set[str] = set()
        self.provided: set[str] = set()
        self.catalogs: dict[str, dict[tuple[str, str], str]] = {}  # a workspace's folder: {(catalog, name): range}

    def reads(self, record):
        return extractor_name(record) in _MANIFEST_NAMES or extractor_name(record) == PNPM_WORKSPACE.name

    def learn(self, record, facts):
        for ecosystem, name, _spec, _scope, _line in facts.get("declared", ()):
            self.declared.add(f"dep:{ecosystem}:{name}")
        for ecosystem, name, _version, _line, direct in facts.get("locked", ()):
            self.locked.add(f"dep:{ecosystem}:{name}")
            if direct:
                self.direct.add(f"dep:{ecosystem}:{name}")
        for ecosystem, name in facts.get("provides", ()):
            self.provided.add(f"dep:{ecosystem}:{name}")
        if "catalogs" in facts:
            self.catalogs[posixpath.dirname(record.path)] = {(catalog, name): spec for catalog, name, spec in facts["catalogs"]}

    def emit(self, record, facts, graph):
        file_id = f"file:{record.path}"
        for ecosystem, name, spec, scope, line in facts.get("declared", ()):
            if extractor_name(record) == "requirements":
                scope = requirements_scope(record.path)
            attrs = {"spec": spec, "scope": scope}
            if ecosystem == "npm" and spec.startswith("catalog:"):
                attrs.update(self._catalogued(record.path, spec.removeprefix("catalog:") or "default", name))
            graph.edge(file_id, "declares", f"dep:{ecosystem}:{name}", attrs, evidence(record, line))
        for ecosystem, name, version, line, _direct in facts.get("locked", ()):
            graph.edge(file_id, "locks", f"dep:{ecosystem}:{name}", {"version": version}, evidence(record, line))

    def learnt(self):
        return [sorted(self.declared), sorted(self.locked), sorted(self.direct), sorted(self.provided),
                sorted((folder, sorted(entries.items())) for folder, entries in self.catalogs.items())]

    def _catalogued(self, path: str, catalog: str, name: str) -> dict:
        """Return ``{"spec": range, "catalog": catalog}`` for ``name`` in ``catalog`` of the nearest workspace
        above ``path`` that has it; an empty dict when none does (the spec then stays ``catalog:...``)."""
        folder = posixpath.dirname(path)
        while True:
            spec = self.catalogs.get(folder, {}).get((catalog, name))
            if spec is not None:
                return {"spec": spec, "catalog": catalog}
            if not folder:
                return {}
            folder = posixpath.dirname(folder)

    def known(self, dependency: str) -> bool:
        """Return whether ``dependency`` has a node whether or not anything imports it."""
        return dependency in self.declared or dependency in self.locked

    def node(self, graph, dependency: str) -> None:
        _, ecosystem, name = dependency.split(":", 2)
        declared = dependency in self.declared
        graph.node(dependency, "dependency", {
            "ecosystem": ecosystem,
            "name": name,
            "declared": declared,
            "locked": dependency in self.locked,
            "direct": declared or dependency in self.direct,
            "in_repository": dependency in self.provided,
        })

    def finish(self, graph):
        for dependency in sorted(self.declared | self.locked | self.imported):
            self.node(graph, dependency)
