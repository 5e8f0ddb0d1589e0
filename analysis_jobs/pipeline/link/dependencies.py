"""Declared and locked dependencies: a ``declares``/``locks`` edge per manifest row, a node per dependency."""

import posixpath
import re

from ..extractors import DECLARING, PNPM_WORKSPACE
from .family import Family, evidence, extractor_name, folders_above

_DEV_WORDS = re.compile(r"(^|[^a-z])(dev|test|tests|testing|lint|docs?|ci|bench)([^a-z]|$)")
# The manifests, and the pnpm workspaces whose catalogs give their "catalog:" specs a range.
_READ = frozenset((*(extractor.name for extractor in DECLARING), PNPM_WORKSPACE.name))
# The rows whose ranges the manifests below take.
_SHARING = frozenset((("cargo", "workspace"), ("maven", "managed"), ("nuget", "managed")))


def _left_to(ecosystem: str, spec: str, scope: str) -> str | None:
    """Return where a declared spec leaves its range to (a manifest above it), or None when it writes one."""
    if ecosystem == "npm" and spec.startswith("catalog:"):
        return "catalog:" + (spec.removeprefix("catalog:") or "default")
    if ecosystem == "cargo" and spec == "workspace":
        return "workspace"
    if ecosystem in ("maven", "nuget") and not spec and scope != "managed":
        return "managed"
    return None


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
    project's own distribution), so that a monorepo's own packages are not counted as what it depends on.

    A spec that leaves its range to a manifest above takes it from the nearest that has it, and says where it came
    from: an npm ``"react": "catalog:"`` from a ``pnpm-workspace.yaml``'s catalogs (``catalog``), a crate's
    ``{ workspace = true }`` from the workspace's ``[workspace.dependencies]`` (``workspace``), a Maven dependency
    with no ``<version>`` from a parent pom's ``<dependencyManagement>`` and a NuGet reference with no version from
    a ``Directory.Packages.props`` (``managed``).
    """

    def __init__(self, records):
        super().__init__(records)
        self.declared: set[str] = set()
        self.direct: set[str] = set()
        self.locked: set[str] = set()
        self.imported: set[str] = set()
        self.provided: set[str] = set()
        # A folder: what its manifests give the ones below it, {(where, dependency): range}: a pnpm catalog
        # ("catalog:default"), a Cargo workspace ("workspace"), a pom's dependencyManagement ("managed").
        self.shared: dict[str, dict[tuple[str, str], str]] = {}
        self.renamed: dict[str, dict[str, str]] = {}  # a Cargo workspace's folder: {its key: the crate it names}
        self.inheriting: list[tuple[str, str]] = []  # (manifest, key) of each crate taken from a workspace
        self.requirement_scopes: dict[str, str] = {}  # a requirements file a pyproject names: the scope it gives

    def reads(self, record):
        # A Python script declares what it runs with in its inline metadata (PEP 723): only those facts say "declared".
        return extractor_name(record) in _READ or (
            extractor_name(record) == "python" and record.facts is not None and '"declared":' in record.facts
        )

    def learn(self, record, facts):
        shared = self.shared.setdefault(posixpath.dirname(record.path), {})
        if "renamed" in facts:
            self.renamed[posixpath.dirname(record.path)] = dict(facts["renamed"])
        for file, scope in facts.get("requirement_files", ()):
            self.requirement_scopes.setdefault(posixpath.normpath(posixpath.join(posixpath.dirname(record.path), file)), scope)
        for ecosystem, name, spec, scope, _line in facts.get("declared", ()):
            if ecosystem == "cargo" and spec == "workspace":
                self.inheriting.append((record.path, name))  # which crate it is, once every workspace is known
                continue
            self.declared.add(f"dep:{ecosystem}:{name}")
            if (ecosystem, scope) in _SHARING and spec:
                shared.setdefault((scope, f"dep:{ecosystem}:{name}"), spec)
        for ecosystem, name, _version, _line, direct in facts.get("locked", ()):
            self.locked.add(f"dep:{ecosystem}:{name}")
            if direct:
                self.direct.add(f"dep:{ecosystem}:{name}")
        for ecosystem, name in facts.get("provides", ()):
            self.provided.add(f"dep:{ecosystem}:{name}")
        for catalog, name, spec in facts.get("catalogs", ()):
            shared.setdefault((f"catalog:{catalog}", f"dep:npm:{name}"), spec)

    def learned(self):
        self.declared.update(f"dep:cargo:{self._crate(path, key)}" for path, key in self.inheriting)
        self.inheriting = []

    def emit(self, record, facts, graph):
        file_id = f"file:{record.path}"
        replaced = {module: (by, version) for module, by, version in facts.get("replaced", ())}  # go.mod's
        for ecosystem, name, spec, scope, line in facts.get("declared", ()):
            if extractor_name(record) == "requirements":
                scope = self.requirement_scopes.get(record.path) or requirements_scope(record.path)
            attrs = {"spec": spec, "scope": scope}
            if ecosystem == "cargo" and spec == "workspace":
                name = self._crate(record.path, name)
            if where := _left_to(ecosystem, spec, scope):
                attrs.update(self._inherited(record.path, where, f"dep:{ecosystem}:{name}"))
            if name in replaced:  # what the build takes instead: a fork (at its version) or a folder
                by, version = replaced[name]
                attrs["replaced_by"] = f"{by}@{version}" if version else by
            graph.edge(file_id, "declares", f"dep:{ecosystem}:{name}", attrs, evidence(record, line))
        for ecosystem, name, version, line, _direct in facts.get("locked", ()):
            graph.edge(file_id, "locks", f"dep:{ecosystem}:{name}", {"version": version}, evidence(record, line))

    def learnt(self):
        return [sorted(self.declared), sorted(self.locked), sorted(self.direct), sorted(self.provided),
                sorted((folder, sorted(entries.items())) for folder, entries in self.shared.items() if entries),
                sorted((folder, sorted(renamed.items())) for folder, renamed in self.renamed.items()),
                sorted(self.requirement_scopes.items())]

    def _crate(self, path: str, key: str) -> str:
        """Return the crate a member's ``key = { workspace = true }`` is: the one the nearest workspace above that
        renames ``key`` names (``memmap = { package = "memmap2" }``), else ``key`` itself."""
        return next((self.renamed[folder][key] for folder in folders_above(path) if key in self.renamed.get(folder, {})), key)

    def _inherited(self, path: str, where: str, dependency: str) -> dict:
        """Return the range and its origin (``{"spec": "^18", "catalog": "default"}``, ``{"spec": "1", "workspace":
        True}``) that the nearest folder at or above ``path``'s gives ``dependency`` from ``where``; an empty dict
        when none does (the spec then stays as written)."""
        for folder in folders_above(path):
            spec = self.shared.get(folder, {}).get((where, dependency))
            if spec is not None:
                origin, _, catalog = where.partition(":")
                return {"spec": spec, origin: catalog or True}
        return {}

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
