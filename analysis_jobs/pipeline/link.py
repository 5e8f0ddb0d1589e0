"""
Linking: from each file's cached, path-independent facts to one graph, where paths and the other files matter.

This is where Python module names are given (from ``__init__.py`` chains; a source whose root is itself a
package takes the name its own absolute imports use for it), imports are resolved (an in-repository module,
the standard library, or an external distribution), relative JavaScript imports are matched to files, and
declared and locked dependencies meet (a dependency is direct when a manifest declares it or a lockfile's
root depends on it, transitive when only locked).
"""

import posixpath
import re
import sys
from collections import Counter
from dataclasses import dataclass

from .extractors import INVENTORY_VERSION
from .extractors.manifests import pypi_name
from .graph import GraphBuilder

INVENTORY = f"inventory@{INVENTORY_VERSION}"

# Import names whose distribution is called something else (the rest: the PEP 503 name of the import).
IMPORT_TO_DISTRIBUTION = {
    "yaml": "pyyaml", "PIL": "pillow", "bs4": "beautifulsoup4", "sklearn": "scikit-learn", "cv2": "opencv-python",
    "dateutil": "python-dateutil", "jwt": "pyjwt", "dotenv": "python-dotenv", "magic": "python-magic",
    "OpenSSL": "pyopenssl", "Crypto": "pycryptodome", "environ": "django-environ",
    "rest_framework": "djangorestframework", "attr": "attrs", "serial": "pyserial", "git": "gitpython",
    "docx": "python-docx", "pkg_resources": "setuptools", "_pytest": "pytest", "django_filters": "django-filter",
    "debug_toolbar": "django-debug-toolbar", "corsheaders": "django-cors-headers", "zmq": "pyzmq", "fitz": "pymupdf",
    "win32api": "pywin32", "psycopg2": "psycopg2", "MySQLdb": "mysqlclient", "jose": "python-jose",
    "multipart": "python-multipart", "google.protobuf": "protobuf", "lxml": "lxml", "markdown": "markdown",
}
PYTHON_STDLIB = frozenset(sys.stdlib_module_names)
NODE_BUILTINS = frozenset(
    "assert async_hooks buffer child_process cluster console constants crypto dgram diagnostics_channel dns domain "
    "events fs http http2 https inspector module net os path perf_hooks process punycode querystring readline repl "
    "stream string_decoder sys timers tls trace_events tty url util v8 vm wasi worker_threads zlib test".split()
)
JS_SUFFIXES = (".js", ".mjs", ".cjs", ".jsx", ".ts", ".tsx", ".mts", ".cts", ".d.ts")
_DEV_WORDS = re.compile(r"(^|[^a-z])(dev|test|tests|testing|lint|docs?|ci|bench)([^a-z]|$)")


@dataclass(slots=True)
class FileRecord:
    path: str
    kind: str  # file | symlink | unsafe | submodule | special
    size: int = 0
    sha256: str = ""
    binary: bool = False
    lines: int = 0
    language: str = "other"
    extractor: str = ""  # the extractor key, when one read the file
    facts: dict | None = None
    skipped: str = ""  # why a file's bytes were not read: too-large, unreadable
    inside: bool = True


def python_module_names(paths: list[str], root_package: str | None) -> dict[str, str]:
    """Map each Python file path to its dotted module name."""
    packages = {posixpath.dirname(path) for path in paths if posixpath.basename(path) == "__init__.py"}
    names = {}
    for path in paths:
        directory, name = posixpath.split(path)
        stem = name.rsplit(".", 1)[0]
        parts = [] if stem == "__init__" else [stem]
        while directory and directory in packages:
            directory, package = posixpath.split(directory)
            parts.insert(0, package)
        if not directory and "" in packages and root_package:
            parts.insert(0, root_package)
        names[path] = ".".join(parts) or "__init__"
    return names


def infer_root_package(records: list[FileRecord]) -> str | None:
    """Return the name a package-shaped source root goes by: the head its own absolute imports use most."""
    python = [record for record in records if record.extractor.startswith("python@")]
    if not any(record.path == "__init__.py" for record in python):
        return None
    top = set()
    for record in python:
        head = record.path.split("/", 1)
        if len(head) == 2:
            top.add(head[0])
        elif head[0] != "__init__.py":
            top.add(head[0].rsplit(".", 1)[0])
    votes: Counter = Counter()
    for record in python:
        for module, level, names, _line in (record.facts or {}).get("imports", ()):
            if level == 0 and "." in module:
                first, second = module.split(".", 2)[:2]
                if second in top and first not in top:
                    votes[first] += 1
    if not votes:
        return None
    best = max(votes.values())
    return min(name for name, count in votes.items() if count == best)


def requirements_scope(path: str) -> str:
    return "dev" if _DEV_WORDS.search(path.lower()) else "main"


class Linker:
    def __init__(self, records: list[FileRecord]):
        self.records = sorted(records, key=lambda record: record.path)
        self.graph = GraphBuilder()
        self.declared: set[str] = set()
        self.direct: set[str] = set()
        self.locked: set[str] = set()
        self.imported: set[str] = set()

    def link(self) -> GraphBuilder:
        self._files()
        self._dependencies()
        self._python()
        self._javascript()
        self._iac()
        self._diagnostics()
        self._dependency_nodes()
        return self.graph

    # -- inventory ---------------------------------------------------------------------------------------------

    def _files(self) -> None:
        languages: Counter = Counter()
        total = 0
        for record in self.records:
            if record.kind != "file":
                continue
            attrs = {"language": record.language, "size": record.size, "sha256": record.sha256, "binary": record.binary}
            if record.skipped:
                attrs["skipped"] = record.skipped
            self.graph.node(f"file:{record.path}", "file", attrs, (record.path, 1, max(1, record.lines), INVENTORY))
            languages[record.language] += 1
            total += record.size
        files = sum(languages.values())
        self.graph.node("repo:", "repository", {"files": files, "bytes": total, "languages": dict(sorted(languages.items()))})

    def _diagnostic(self, path: str, code: str, message: str, line: int, extractor: str) -> None:
        self.graph.node(f"diag:{code}:{path}", "diagnostic", {"code": code, "message": message}, (path, line, line, extractor))

    def _diagnostics(self) -> None:
        for record in self.records:
            if record.kind == "symlink":
                code = "symlink-not-followed" if record.inside else "symlink-escapes-source"
                self._diagnostic(record.path, code, "A symbolic link is never followed.", 1, INVENTORY)
            elif record.kind == "unsafe":
                self._diagnostic(record.path, "unsafe-path", "An absolute path or one with '..' is never read.", 1, INVENTORY)
            elif record.kind == "submodule":
                self._diagnostic(record.path, "submodule-not-read", "A git submodule is another repository.", 1, INVENTORY)
            elif record.kind == "special":
                self._diagnostic(record.path, "not-a-regular-file", "Only regular files are read.", 1, INVENTORY)
            elif record.skipped:
                self._diagnostic(record.path, f"file-{record.skipped}", f"The file was not read ({record.skipped}).", 1, INVENTORY)
            elif record.facts and "error" in record.facts:
                message, line = record.facts["error"]
                self._diagnostic(record.path, "parse-error", str(message), int(line), record.extractor)

    # -- dependencies ------------------------------------------------------------------------------------------

    def _dependencies(self) -> None:
        for record in self.records:
            facts = record.facts or {}
            for ecosystem, name, spec, scope, line in facts.get("declared", ()):
                if record.extractor.startswith("requirements@"):
                    scope = requirements_scope(record.path)
                dependency = f"dep:{ecosystem}:{name}"
                self.declared.add(dependency)
                self.graph.edge(f"file:{record.path}", "declares", dependency, {"spec": spec, "scope": scope},
                                (record.path, line, line, record.extractor))
            for ecosystem, name, version, line, direct in facts.get("locked", ()):
                dependency = f"dep:{ecosystem}:{name}"
                self.locked.add(dependency)
                if direct:
                    self.direct.add(dependency)
                self.graph.edge(f"file:{record.path}", "locks", dependency, {"version": version},
                                (record.path, line, line, record.extractor))

    def _dependency_nodes(self) -> None:
        dependencies = self.declared | self.locked | self.imported
        for dependency in sorted(dependencies):
            _, ecosystem, name = dependency.split(":", 2)
            declared = dependency in self.declared
            self.graph.node(dependency, "dependency", {
                "ecosystem": ecosystem,
                "name": name,
                "declared": declared,
                "locked": dependency in self.locked,
                "direct": declared or dependency in self.direct,
            })

    # -- Python ------------------------------------------------------------------------------------------------

    def _python(self) -> None:
        python = [record for record in self.records if record.extractor.startswith("python@")]
        names = python_module_names([record.path for record in python], infer_root_package(python))
        modules = set(names.values())
        for record in python:
            module = names[record.path]
            module_id = f"mod:py:{module}"
            evidence = (record.path, 1, max(1, record.lines), record.extractor)
            self.graph.node(module_id, "module", {"language": "python", "name": module}, evidence)
            facts = record.facts or {}
            is_package = record.path.endswith(("__init__.py", "__init__.pyi"))
            for kind, name, first, last in facts.get("defs", ()):
                symbol = self.graph.node(f"sym:py:{module}.{name}", kind, {"name": name}, (record.path, first, last, record.extractor))
                self.graph.edge(module_id, "defines", symbol)
            for imported, level, imported_names, line in facts.get("imports", ()):
                target = self._resolve_python(module, is_package, imported, level, imported_names, modules)
                if target is not None:
                    self.graph.edge(module_id, "imports", target, None, (record.path, line, line, record.extractor))
            self._calls(module_id, record)

    def _resolve_python(self, module, is_package, imported, level, names, modules) -> str | None:
        if level:
            package = module.split(".") if is_package else module.split(".")[:-1]
            if level - 1 > len(package):
                return None
            base = package[: len(package) - (level - 1)] + (imported.split(".") if imported else [])
        else:
            base = imported.split(".")
        candidates = [base + [name] for name in names if name != "*"] + [base[:end] for end in range(len(base), 0, -1)]
        for candidate in candidates:
            dotted = ".".join(candidate)
            if dotted in modules:
                return f"mod:py:{dotted}"
        if level or not base or not base[0]:
            dotted = ".".join(base)
            self.graph.node(f"mod:py:{dotted}", "module", {"language": "python", "name": dotted, "missing": True})
            return f"mod:py:{dotted}"
        head = base[0]
        if head in PYTHON_STDLIB:
            return self.graph.node(f"std:py:{head}", "stdlib", {"language": "python", "name": head})
        distribution = IMPORT_TO_DISTRIBUTION.get(".".join(base[:2])) or IMPORT_TO_DISTRIBUTION.get(head) or pypi_name(head)
        dependency = f"dep:pypi:{distribution}"
        self.imported.add(dependency)
        return dependency

    def _calls(self, module_id: str, record: FileRecord) -> None:
        for client, method, host, url, line in (record.facts or {}).get("calls", ()):
            service = self.graph.node(f"svc:{host}", "service", {"host": host})
            self.graph.edge(module_id, "calls", service, {"client": client, "method": method, "url": url},
                            (record.path, line, line, record.extractor))

    # -- JavaScript and TypeScript ---------------------------------------------------------------------------

    def _javascript(self) -> None:
        scripts = [record for record in self.records if record.extractor.split("@")[0] in ("javascript", "typescript", "tsx")]
        paths = {record.path for record in scripts}
        for record in scripts:
            module_id = f"mod:js:{record.path}"
            language = "javascript" if record.extractor.startswith("javascript@") else "typescript"
            self.graph.node(module_id, "module", {"language": language, "name": record.path},
                            (record.path, 1, max(1, record.lines), record.extractor))
            facts = record.facts or {}
            for spec, _how, line in facts.get("imports", ()):
                if spec:
                    target = self._resolve_js(record.path, spec, paths)
                    self.graph.edge(module_id, "imports", target, None, (record.path, line, line, record.extractor))
            for name, declares, first, last in facts.get("exports", ()):
                symbol = self.graph.node(f"sym:js:{record.path}#{name}", "export", {"name": name, "declares": declares},
                                         (record.path, first, last, record.extractor))
                self.graph.edge(module_id, "exports", symbol)
            self._calls(module_id, record)

    def _resolve_js(self, path: str, spec: str, paths: set[str]) -> str:
        if spec.startswith((".", "/")):
            base = posixpath.normpath(posixpath.join(posixpath.dirname(path), spec)) if not spec.startswith("/") else spec.lstrip("/")
            stems = [base]
            if base.endswith((".js", ".jsx", ".mjs", ".cjs")):
                stems.append(base.rsplit(".", 1)[0])  # TypeScript's ESM style: import "./a.js" means a.ts
            for stem in stems:
                for candidate in [stem] + [stem + suffix for suffix in JS_SUFFIXES] + [f"{stem}/index{suffix}" for suffix in JS_SUFFIXES]:
                    if candidate in paths:
                        return f"mod:js:{candidate}"
            return self.graph.node(f"mod:js:{base}", "module", {"language": "javascript", "name": base, "missing": True})
        bare = spec[5:] if spec.startswith("node:") else spec
        head = bare.split("/", 1)[0]
        if spec.startswith("node:") or head in NODE_BUILTINS:
            return self.graph.node(f"std:node:{head}", "stdlib", {"language": "javascript", "name": head})
        name = "/".join(bare.split("/", 2)[:2]) if bare.startswith("@") else head
        dependency = f"dep:npm:{name}"
        self.imported.add(dependency)
        return dependency

    # -- infrastructure as code ------------------------------------------------------------------------------

    def _iac(self) -> None:
        for record in self.records:
            facts = record.facts or {}
            file_id = f"file:{record.path}"
            for image, line, stage in facts.get("images", ()):
                target = self.graph.node(f"img:{image}", "image", {"ref": image})
                self.graph.edge(file_id, "uses_image", target, {"stage": stage}, (record.path, line, line, record.extractor))
            for name, image, build, first, last in facts.get("services", ()):
                service = self.graph.node(f"compose:{record.path}#{name}", "compose_service", {"name": name, "build": build},
                                          (record.path, first, last, record.extractor))
                self.graph.edge(file_id, "defines", service)
                if image:
                    target = self.graph.node(f"img:{image}", "image", {"ref": image})
                    self.graph.edge(service, "uses_image", target, None, (record.path, first, first, record.extractor))
            directory = posixpath.dirname(record.path)
            for block, kind, name, source, first, last in facts.get("blocks", ()):
                label = ".".join(part for part in (kind, name) if part)
                node = self.graph.node(f"tf:{directory}:{block}.{label}", f"terraform_{block}",
                                       {"type": kind, "name": name, "source": source}, (record.path, first, last, record.extractor))
                self.graph.edge(file_id, "defines", node)
