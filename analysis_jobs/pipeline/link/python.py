"""
Python: a module node per file, its top-level symbols, its imports resolved, and its HTTP calls.

A module's name comes from its path, so two files never share one node. Walking up from the file, a directory
with an ``__init__.py`` (or ``__init__.pyi``) is a regular package and one without it a namespace package
(PEP 420), until a directory where import names start: the source's root, a ``src`` folder, or a project root
(one holding ``pyproject.toml``, ``setup.py``, ``setup.cfg`` or Django's ``manage.py``). A source whose root is
itself a package takes the name its own absolute imports use for it.

An absolute import resolves, in order, to a sibling module of a script (a directory that is not a package is
the first place a script's imports are looked up), a module by that full name, or a module by another name it
has, the nearer of two: the one its regular-package chain gives it (``backend/app/models.py`` is also
``app.models``), or the one below a project inside a package (label-studio's ``label_studio/manage.py`` makes
``label_studio/core/models.py`` also ``core.models``).

What is not in the repository is the standard library (a fixed list: the facts never depend on the worker's
Python), or a distribution: the declared or locked one whose name the import name is (``yaml``: ``pyyaml``,
``taggit``: ``django-taggit``; of a dotted name, its longest prefix that names one: ``azure.storage.queue``),
else a module beside the importer in its package (a package's module run as a script), else a table of known
names, else the import name itself (of a namespace package such as ``zope``, its first two components:
``zope.interface``).

A name that starts like an in-repository module but is none is a missing module, never a dependency, with two
exceptions, both from PEP 420. Python imports a regular package (an installed one) before it makes a namespace
package of folders, so where the repository has only a namespace folder of the name, a declared distribution of
that name is what the import is (ansible's ``packaging/`` folder of scripts, beside its declared ``packaging``).
And a namespace package many distributions share has their portions too, so an import of a portion the
repository does not hold is that distribution (``plone.app.iterate`` beside plone.api's own ``plone.api``).

``from pkg import a, b`` has an edge to each of ``a`` and ``b`` that is a module, and to ``pkg`` when something
else is imported from it. An import's edge carries how it is made: ``type_only``, ``optional``, ``local``, ``lazy``,
``dynamic`` (see the extractor).
"""

import posixpath

from ..extractors.manifests import pypi_name
from .dependencies import Dependencies
from .family import Family, evidence, extractor_name, is_module_file, service_calls, whole_file
from .stdlib import STDLIB

# Import names whose distribution is called something else, when no declared or locked one says.
IMPORT_TO_DISTRIBUTION = {
    "yaml": "pyyaml", "PIL": "pillow", "bs4": "beautifulsoup4", "sklearn": "scikit-learn", "cv2": "opencv-python",
    "dateutil": "python-dateutil", "jwt": "pyjwt", "dotenv": "python-dotenv", "magic": "python-magic",
    "OpenSSL": "pyopenssl", "Crypto": "pycryptodome", "environ": "django-environ",
    "rest_framework": "djangorestframework", "attr": "attrs", "serial": "pyserial", "git": "gitpython",
    "docx": "python-docx", "pkg_resources": "setuptools", "_cffi_backend": "cffi", "django_filters": "django-filter",
    "debug_toolbar": "django-debug-toolbar", "corsheaders": "django-cors-headers", "zmq": "pyzmq", "fitz": "pymupdf",
    "win32api": "pywin32", "MySQLdb": "mysqlclient", "jose": "python-jose", "multipart": "python-multipart",
    "google.protobuf": "protobuf", "taggit": "django-taggit", "mptt": "django-mptt", "storages": "django-storages",
    "graphql": "graphql-core", "grpc": "grpcio", "slugify": "python-slugify", "websocket": "websocket-client",
    "Levenshtein": "python-levenshtein", "skimage": "scikit-image", "crispy_forms": "django-crispy-forms",
    "_distutils_hack": "setuptools", "socks": "pysocks", "sockshandler": "pysocks", "jnius": "pyjnius",
    "railroad": "railroad-diagrams", "ntlm": "python-ntlm", "dns": "dnspython", "nacl": "pynacl",
    "Cryptodome": "pycryptodomex", "googleapiclient": "google-api-python-client", "kafka": "kafka-python",
    "ldap": "python-ldap", "usb": "pyusb", "gi": "pygobject", "wx": "wxpython", "Xlib": "python-xlib",
    "pythonjsonlogger": "python-json-logger", "telegram": "python-telegram-bot", "win32con": "pywin32",
    "win32com": "pywin32", "win32file": "pywin32", "win32event": "pywin32", "pywintypes": "pywin32",
    "bson": "pymongo", "cassandra": "cassandra-driver", "memcache": "python-memcached",
    "github": "pygithub", "gitlab": "python-gitlab", "jenkins": "python-jenkins", "consul": "python-consul",
    "factory": "factory-boy", "vcr": "vcrpy", "hamcrest": "pyhamcrest", "xdist": "pytest-xdist", "cog": "cogapp",
    "decouple": "python-decouple", "socketio": "python-socketio", "engineio": "python-engineio",
    "pptx": "python-pptx", "mpl_toolkits": "matplotlib", "markdown_it": "markdown-it-py", "OpenGL": "pyopengl",
    "Bio": "biopython", "snappy": "python-snappy", "cairo": "pycairo", "argon2": "argon2-cffi",
    "speech_recognition": "speechrecognition", "opensearchpy": "opensearch-py", "umap": "umap-learn",
    "pdfminer": "pdfminer-six", "strawberry": "strawberry-graphql", "material": "mkdocs-material",
    "ldclient": "launchdarkly-server-sdk", "openfeature": "openfeature-sdk", "agents": "openai-agents",
    "discord": "discord-py", "slack": "slackclient",
    "google.oauth2": "google-auth", "google.api": "googleapis-common-protos", "google.rpc": "googleapis-common-protos",
    "google.type": "googleapis-common-protos", "google.longrunning": "googleapis-common-protos",
    # OpenTelemetry's API is one distribution of many modules; its SDK, exporters and instrumentations are not.
    **{f"opentelemetry.{name}": "opentelemetry-api" for name in (
        "trace", "context", "propagate", "propagators", "baggage", "metrics", "util", "attributes", "_logs",
        "environment_variables", "version",
    )},
    "opentelemetry.instrumentation.utils": "opentelemetry-instrumentation",
    "opentelemetry.instrumentation.instrumentor": "opentelemetry-instrumentation",
    "oauth2_provider": "django-oauth-toolkit", "phonenumber_field": "django-phonenumber-field", "sass": "libsass",
    "bootstrap3": "django-bootstrap3", "bootstrap4": "django-bootstrap4", "bidi": "python-bidi",
    "upath": "universal-pathlib", "antlr4": "antlr4-python3-runtime", "grpc_health": "grpcio-health-checking",
    "grpc_status": "grpcio-status", "grpc_reflection": "grpcio-reflection", "grpc_tools": "grpcio-tools",
    "z3": "z3-solver", "flint": "python-flint", "pysat": "python-sat",
    "openstack": "openstacksdk", "libvirt": "libvirt-python", "placement": "openstack-placement",
    "rest_framework_simplejwt": "djangorestframework-simplejwt", "rest_flex_fields": "drf-flex-fields",
    # Zope's own modules (plone.api's)
    **{name: "zope" for name in ("App", "OFS", "ZPublisher", "ZTUtils", "Zope2")},
}
# Distributions that install a module under another one's import name (a fork, a lighter or headless build):
# declared, they are what the import is, else the table's above.
ALTERNATE_DISTRIBUTIONS = {
    "phonenumbers": ("phonenumberslite",), "PIL": ("pillow-simd",), "yaml": ("pyyaml-ft",),
    "cv2": ("opencv-python-headless", "opencv-contrib-python", "opencv-contrib-python-headless"),
    "psycopg2": ("psycopg2-binary",), "magic": ("python-magic-bin",), "Crypto": ("pycrypto",),
    "vat_moss": ("vat-moss-forked",), "static": ("static3",),
}
# Namespace packages whose distributions are named for one more component than the namespace has:
# ``zope.interface``, ``backports.zoneinfo``, ``google.genai``, ``google.cloud.storage``, ``azure.mgmt.compute``.
NAMESPACE_HEADS = frozenset({
    "backports", "flufl", "jaraco", "oslo", "repoze", "ruamel", "sphinxcontrib", "zc", "zope", "dogpile", "Products",
    "plone", "plone.app", "collective", "z3c",
    "google", "google.cloud", "azure", "azure.ai", "azure.keyvault", "azure.mgmt", "azure.monitor", "azure.search",
    "azure.storage", "opentelemetry", "opentelemetry.exporter", "opentelemetry.instrumentation",
})
NAMESPACE_ROOTS = frozenset(head.split(".", 1)[0] for head in NAMESPACE_HEADS)
# How a distribution's name is made from its import name: ``django-`` + ``taggit``, ``graphql`` + ``-core``,
# ``apache-`` + ``superset-core``.
DISTRIBUTION_PREFIXES = ("python-", "django-", "flask-", "py-", "py", "apache-")
DISTRIBUTION_SUFFIXES = ("-core", "-python", "-py", "-binary", "-client")
PACKAGE_FILES = ("__init__.py", "__init__.pyi")
PROJECT_FILES = ("pyproject.toml", "setup.py", "setup.cfg", "manage.py")


def _namespace(base: list[str]) -> int:
    """Return how many leading components of ``base`` are the longest namespace it is inside (0 for none)."""
    for end in range(len(base) - 1, 0, -1):
        if ".".join(base[:end]) in NAMESPACE_HEADS:
            return end
    return 0


def _public(head: str) -> str:
    """Return a top-level module's public name: no distribution's name starts or ends with the ``-`` that an
    underscore would become."""
    return head.strip("_") or head


def is_python(record) -> bool:
    return extractor_name(record) == "python"


def is_module(record) -> bool:
    return is_module_file(record, ("python",), ("python",))


def _stem(path: str) -> str:
    return posixpath.basename(path).rsplit(".", 1)[0]


def _imports_by_distribution() -> dict[str, set[str]]:
    imports: dict[str, set[str]] = {}
    for module, distribution in IMPORT_TO_DISTRIBUTION.items():
        imports.setdefault(distribution, set()).add(pypi_name(module))
    for module, distributions in ALTERNATE_DISTRIBUTIONS.items():
        for distribution in distributions:
            imports.setdefault(distribution, set()).add(pypi_name(module))
    return imports


IMPORTS_BY_DISTRIBUTION = _imports_by_distribution()  # a distribution: its import names the tables above give


def import_name_of(distribution: str) -> set[str]:
    """Return the import names ``distribution`` (PEP 503 normalised) is commonly made from (``mt-940``: ``mt940``),
    as PEP 503 normalises them."""
    names = {distribution, distribution.replace("-", ""), *IMPORTS_BY_DISTRIBUTION.get(distribution, ())}
    for prefix in DISTRIBUTION_PREFIXES:
        if distribution.startswith(prefix) and len(distribution) > len(prefix):
            names.add(distribution[len(prefix) :])
    for suffix in DISTRIBUTION_SUFFIXES:
        if distribution.endswith(suffix) and len(distribution) > len(suffix):
            names.add(distribution[: -len(suffix)])
    return names


class ModuleNames:
    """The dotted names of a source's Python files, and what each absolute name resolves to."""

    def __init__(self, paths: list[str], project_dirs: set[str], root_package: str | None):
        self.packages = {posixpath.dirname(path) for path in paths if posixpath.basename(path) in PACKAGE_FILES}
        self.roots = {"", *project_dirs}
        self.root_package = root_package
        self.of: dict[str, str] = {}  # path -> full name
        self.full: dict[str, str] = {}  # full name -> path (the first in path order)
        self.anchored: dict[str, list[str]] = {}  # another name (see the module's docstring) -> paths
        # A project whose folder is itself a package (label-studio's label_studio/manage.py): what runs there imports
        # the package's modules by the names they have below it (``core.models``).
        inner_roots = sorted(directory for directory in project_dirs if directory in self.packages)
        for path in paths:
            name = self._name(path, namespaces=True)
            self.of[path] = name
            self.full.setdefault(name, path)
            for other in sorted({self._name(path, namespaces=False), *_names_below(path, inner_roots)} - {name}):
                self.anchored.setdefault(other, []).append(path)
        self.heads = {name.split(".", 1)[0] for name in [*self.full, *self.anchored]}
        # Of the names inside a namespace package that many distributions share (zope, google, plone), each
        # prefix one component past the namespace: the portions the repository holds (``plone.api``).
        self.portions = {
            ".".join(parts[: end + 1]) for parts in (name.split(".") for name in [*self.full, *self.anchored])
            if parts[0] in NAMESPACE_ROOTS and (end := _namespace(parts)) and end < len(parts)
        }

    def _name(self, path: str, *, namespaces: bool) -> str:
        directory, stem = posixpath.dirname(path), _stem(path)
        parts = [] if stem == "__init__" else [stem]
        while directory:
            is_package = directory in self.packages
            if not is_package and (not namespaces or directory in self.roots or posixpath.basename(directory) == "src"):
                break
            directory, package = posixpath.split(directory)
            parts.insert(0, package)
        if not directory and "" in self.packages and self.root_package:
            parts.insert(0, self.root_package)
        return ".".join(parts) or "__init__"

    def node_id(self, path: str) -> str:
        """Return the module's node id: by its name, or by its path too where an earlier file has the name."""
        name = self.of[path]
        return f"mod:py:{name}" if self.full[name] == path else f"mod:py:{name}@{path}"

    def sibling(self, dotted: str, importer: str) -> str | None:
        """Return the path of the module ``dotted`` names in ``importer``'s own folder, or None."""
        directory = posixpath.dirname(importer)
        if directory:
            for candidate in (f"{directory}/{dotted.replace('.', '/')}.py", f"{directory}/{dotted.replace('.', '/')}/__init__.py"):
                if candidate in self.of:
                    return candidate
        return None

    def find(self, dotted: str, importer: str) -> str | None:
        """Return the path of the module ``dotted`` names when ``importer`` imports it absolutely, or None."""
        if posixpath.dirname(importer) not in self.packages and (found := self.sibling(dotted, importer)):
            return found
        if dotted in self.full:
            return self.full[dotted]
        chained = self.anchored.get(dotted)
        if chained:
            return max(chained, key=lambda path: (len(posixpath.commonprefix([path, importer])), -chained.index(path)))
        return None


def _names_below(path: str, roots: list[str]) -> list[str]:
    """Return the dotted names ``path`` has below each of ``roots`` that holds it (``core/models.py``: ``core.models``)."""
    names = []
    for root in roots:
        if path.startswith(root + "/"):
            parts = path[len(root) + 1 :].rsplit(".", 1)[0].split("/")
            names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return [name for name in names if name]


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
    votes: dict[str, int] = {}
    for imports in imports_of.values():
        for module, level, _names, _line, *_ in imports:
            if level == 0 and "." in module:
                first, second = module.split(".", 2)[:2]
                if second in top and first not in top:
                    votes[first] = votes.get(first, 0) + 1
    if not votes:
        return None
    best = max(votes.values())
    return min(name for name, count in votes.items() if count == best)


class Python(Family):
    def __init__(self, records, dependencies: Dependencies):
        super().__init__(records)
        self.dependencies = dependencies
        self.paths = [record.path for record in records if is_module(record)]
        self.project_dirs = {posixpath.dirname(record.path) for record in records if posixpath.basename(record.path) in PROJECT_FILES}
        self.root_is_package = "__init__.py" in self.paths
        self.imports_of: dict[str, list] = {}
        self.names: ModuleNames | None = None
        self.distributions: dict[str, str] = {}

    def reads(self, record):
        return self.root_is_package and is_python(record)  # the root package's name is voted by the imports

    def learn(self, record, facts):
        self.imports_of[record.path] = facts.get("imports", ())

    def learned(self):
        self.names = ModuleNames(self.paths, self.project_dirs, infer_root_package(self.paths, self.imports_of))
        self.imports_of = {}
        self.distributions = self._distributions_by_import_name()

    def learnt(self):
        # The module names and the distributions follow from these and from the dependencies' own learnt.
        return [self.paths, sorted(self.project_dirs), self.names.root_package]

    def _distributions_by_import_name(self) -> dict[str, str]:
        """Map import names to the declared or locked PyPI distributions they come from, where only one fits."""
        known = self.dependencies.declared | self.dependencies.locked
        candidates: dict[str, set[str]] = {}
        for dependency in known:
            _, ecosystem, name = dependency.split(":", 2)
            if ecosystem == "pypi":
                for import_name in import_name_of(name):
                    candidates.setdefault(import_name, set()).add(name)
        return {name: name if name in found else next(iter(found)) for name, found in candidates.items() if name in found or len(found) == 1}

    def emit(self, record, facts, graph):
        if not is_module(record):
            return
        names = self.names
        module = names.of[record.path]
        module_id = names.node_id(record.path)
        graph.node(module_id, "module", {"language": "python", "name": module}, whole_file(record))
        is_package = posixpath.basename(record.path) in PACKAGE_FILES
        for kind, name, first, last in facts.get("defs", ()):
            symbol = graph.node(f"sym:py:{module}.{name}", kind, {"name": name}, evidence(record, first, last))
            graph.edge(module_id, "defines", symbol)
        for imported, level, imported_names, line, *how in facts.get("imports", ()):
            attrs = {kind: True for kind in how[0]} if how else None
            for target in self._resolve(graph, record.path, module, is_package, imported, level, imported_names):
                graph.edge(module_id, "imports", target, attrs, evidence(record, line))
        service_calls(graph, module_id, record, facts)

    def _resolve(self, graph, path, module, is_package, imported, level, names) -> list[str]:
        """Return the node ids an import statement's edges go to."""
        if level:
            package = module.split(".") if is_package else module.split(".")[:-1]
            if level - 1 > len(package):
                return []
            base = package[: len(package) - (level - 1)] + (imported.split(".") if imported else [])
            find = self.names.full.get
        else:
            base = imported.split(".")
            find = lambda dotted: self.names.find(dotted, path)  # noqa: E731
        targets, other_names = [], not names or "*" in names
        for name in names:
            if name == "*":
                continue
            found = find(".".join([*base, name]))
            if found is None:
                other_names = True
            else:
                targets.append(self.names.node_id(found))
        if other_names and not level and names and "*" not in names and _namespace([*base, ""]) == len(base):
            # ``from google import genai``: what a namespace package holds are other distributions' modules.
            targets.extend(self._module(graph, path, [*base, name], level, find) for name in names if find(".".join([*base, name])) is None)
        elif other_names or not targets:
            targets.append(self._module(graph, path, base, level, find))
        return targets

    def _module(self, graph, importer: str, base: list[str], level: int, find) -> str:
        """Return the node of the longest in-repository prefix of ``base``, or what is outside the repository."""
        for end in range(len(base), 0, -1):
            found = find(".".join(base[:end]))
            if found is not None:
                return self.names.node_id(found)
        dotted = ".".join(base)
        head = base[0] if base else ""
        # Here ``head`` is no module or regular package of the repository (that would have been found), at most
        # a namespace package's folder; Python imports an installed regular package before it (PEP 420), and a
        # namespace package has its other distributions' portions (``plone.app.iterate`` beside ``plone.api``).
        declared = None if level or not head else self._declared_distribution(base)
        namespace = _namespace(base)
        other_portion = namespace and ".".join(base[: namespace + 1]) not in self.names.portions
        if level or not head or head in self.names.heads and head not in STDLIB and not declared and not other_portion:
            graph.node(f"mod:py:{dotted}", "module", {"language": "python", "name": dotted, "missing": True})
            return f"mod:py:{dotted}"
        if head in STDLIB:
            return graph.node(f"std:py:{head}", "stdlib", {"language": "python", "name": head})
        if not declared and (found := self.names.sibling(head, importer)):
            # A package's module run as a script imports its neighbours absolutely (sympy's generated ANTLR
            # parser: ``from autolevparser import AutolevParser`` when ``__name__`` has no dot).
            return self.names.node_id(found)
        dependency = f"dep:pypi:{declared or self._distribution(base)}"
        self.dependencies.imported.add(dependency)
        return dependency

    def _declared_distribution(self, base: list[str]) -> str | None:
        """Return the declared or locked distribution ``base`` is imported from, or None."""
        # The longest dotted prefix that names a declared distribution: ``azure.storage.queue`` is
        # ``azure-storage-queue``, ``azure.identity`` is ``azure-identity``, ``django.contrib`` is ``django``.
        # A private top-level module (``_pytest``, ``_billiard``) ships with the distribution of its public name.
        prefixes = (pypi_name(".".join(base[:end])) for end in range(len(base), 0, -1))
        for name in (*prefixes, pypi_name(_public(base[0]))):
            if name in self.distributions:
                return self.distributions[name]
        return None

    def _distribution(self, base: list[str]) -> str:
        """Return the distribution ``base`` is imported from when no declared or locked one is."""
        for end in range(len(base), 0, -1):
            if known := IMPORT_TO_DISTRIBUTION.get(".".join(base[:end])):
                return known
        namespace = _namespace(base)
        return pypi_name(".".join(base[:namespace + 1]) if namespace else _public(base[0]))
