"""
Python: a module node per file, its top-level symbols, its imports resolved, and its HTTP calls.

Module names come from ``__init__.py`` chains; a source whose root is itself a package takes the name its own
absolute imports use for it. An import resolves to an in-repository module, the standard library, or an
external distribution (``dep:pypi:NAME``).
"""

import posixpath
import sys
from collections import Counter

from ..extractors.manifests import pypi_name
from .family import Family, evidence, extractor_name, service_calls, whole_file

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


def infer_root_package(paths: list[str], imports_of: dict[str, list]) -> str | None:
    """Return the name a package-shaped source root goes by: the head its own absolute imports use most."""
    if "__init__.py" not in paths:
        return None
    top = set()
    for path in paths:
        head = path.split("/", 1)
        if len(head) == 2:
            top.add(head[0])
        elif head[0] != "__init__.py":
            top.add(head[0].rsplit(".", 1)[0])
    votes: Counter = Counter()
    for imports in imports_of.values():
        for module, level, _names, _line in imports:
            if level == 0 and "." in module:
                first, second = module.split(".", 2)[:2]
                if second in top and first not in top:
                    votes[first] += 1
    if not votes:
        return None
    best = max(votes.values())
    return min(name for name, count in votes.items() if count == best)


def is_python(record) -> bool:
    return extractor_name(record) == "python"


class Python(Family):
    def __init__(self, linker):
        super().__init__(linker)
        self.paths = [record.path for record in linker.records if is_python(record)]
        self.root_is_package = "__init__.py" in self.paths
        self.imports_of: dict[str, list] = {}
        self.names: dict[str, str] = {}
        self.modules: set[str] = set()

    def reads(self, record):
        return self.root_is_package and is_python(record)  # the root package's name is voted by the imports

    def learn(self, record, facts):
        self.imports_of[record.path] = facts.get("imports", ())

    def learned(self):
        self.names = python_module_names(self.paths, infer_root_package(self.paths, self.imports_of))
        self.modules = set(self.names.values())
        self.imports_of = {}

    def emit(self, record, facts, graph):
        if not is_python(record):
            return
        module = self.names[record.path]
        module_id = f"mod:py:{module}"
        graph.node(module_id, "module", {"language": "python", "name": module}, whole_file(record))
        is_package = record.path.endswith(("__init__.py", "__init__.pyi"))
        for kind, name, first, last in facts.get("defs", ()):
            symbol = graph.node(f"sym:py:{module}.{name}", kind, {"name": name}, evidence(record, first, last))
            graph.edge(module_id, "defines", symbol)
        for imported, level, imported_names, line in facts.get("imports", ()):
            target = self._resolve(graph, module, is_package, imported, level, imported_names)
            if target is not None:
                graph.edge(module_id, "imports", target, None, evidence(record, line))
        service_calls(graph, module_id, record, facts)

    def _resolve(self, graph, module, is_package, imported, level, names) -> str | None:
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
            if dotted in self.modules:
                return f"mod:py:{dotted}"
        if level or not base or not base[0]:
            dotted = ".".join(base)
            graph.node(f"mod:py:{dotted}", "module", {"language": "python", "name": dotted, "missing": True})
            return f"mod:py:{dotted}"
        head = base[0]
        if head in PYTHON_STDLIB:
            return graph.node(f"std:py:{head}", "stdlib", {"language": "python", "name": head})
        distribution = IMPORT_TO_DISTRIBUTION.get(".".join(base[:2])) or IMPORT_TO_DISTRIBUTION.get(head) or pypi_name(head)
        dependency = f"dep:pypi:{distribution}"
        self.linker.dependencies.imported.add(dependency)
        return dependency
