"""
Manifests and lockfiles of the other ecosystems a monorepo holds: Go, Rust, Java, .NET, PHP, Ruby, and Python's
``setup.py``. Each gives the same rows as the Python and npm ones (``declared``: ecosystem, name, spec, scope,
line; ``locked``: ecosystem, name, version, line, direct or None when the lockfile cannot say).

TOML is read with ``tomllib``, JSON with ``json``, XML with the standard ``xml.etree`` (never resolving
entities), ``setup.py`` with ``ast`` (read, never executed: only literal lists count, in the call or bound once
to a name); ``go.mod``, ``go.sum`` and ``Gemfile.lock`` are line formats, read here as their tools define them.
Names are kept as each registry compares them: Go module paths, crates, Maven coordinates and gems as written;
NuGet ids and Composer packages, which their registries compare without case, lower-cased.

``setup.py`` is read with the worker's own ``ast``: its literal lists use no new syntax, and a file that does not
parse gives a diagnostic like any other manifest.
"""

import ast
import json
import re
import tomllib
import xml.etree.ElementTree as ElementTree
from xml.parsers import expat

from .base import Extractor, decode
from .manifests import pypi_name, requirement
from .positions import Lines

VERSION = "1"


# -- Python's setup.py -----------------------------------------------------------------------------------------


def _literal_strings(node) -> list[ast.Constant] | None:
    if isinstance(node, (ast.List, ast.Tuple)) and all(isinstance(item, ast.Constant) and isinstance(item.value, str) for item in node.elts):
        return node.elts
    return None


def _bound_once(tree: ast.Module) -> dict[str, ast.expr]:
    """The names the module's top level binds once, and to what: ``install_requires=requires`` reads ``requires``.

    A name bound anywhere else too (again, in a loop, by ``+=``, as a function's local) is left out: which value
    ``setup`` sees would then depend on running the file.
    """
    stores: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            stores[node.id] = stores.get(node.id, 0) + 1
    bound = {}
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target, value = statement.targets[0], statement.value
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            target, value = statement.target, statement.value
        else:
            continue
        if isinstance(target, ast.Name) and stores[target.id] == 1:
            bound[target.id] = value
    return bound


# The setup() keywords that declare requirements, and the scope each gives them (``extras_require`` gives one per extra).
SETUP_KEYWORDS = {"install_requires": "main", "tests_require": "dev"}


def extract_setup_py(data: bytes) -> dict:
    """The literal requirements of every ``setup(...)`` call: written in the call, or in a name bound once to a literal."""
    declared = []
    tree = ast.parse(data)
    bound = _bound_once(tree)

    def value_of(node):
        return bound.get(node.id, node) if isinstance(node, ast.Name) else node

    def add(node, scope):
        for item in _literal_strings(value_of(node)) or ():
            parsed = requirement(item.value)
            if parsed is not None:
                declared.append(["pypi", parsed[0], parsed[1], scope, item.lineno])

    provides = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "setup"):
            continue
        for keyword in node.keywords:
            if keyword.arg == "name" and isinstance(name := value_of(keyword.value), ast.Constant) and isinstance(name.value, str):
                provides.append(["pypi", pypi_name(name.value)])
            elif keyword.arg in SETUP_KEYWORDS:
                add(keyword.value, SETUP_KEYWORDS[keyword.arg])
            elif keyword.arg == "extras_require" and isinstance(extras := value_of(keyword.value), ast.Dict):
                for key, value in zip(extras.keys, extras.values):
                    if isinstance(key, ast.Constant) and isinstance(key.value, str):
                        add(value, f"optional:{key.value}")
    return {"declared": declared, "locked": [], "provides": provides}


# -- Go --------------------------------------------------------------------------------------------------------

_GO_BLOCK = re.compile(r"^(\w+)\s*\($")


def extract_go_mod(data: bytes) -> dict:
    """``require`` lines, alone or in a block: a direct requirement is declared; one marked ``// indirect`` is
    what the build needs for another module's sake, so it is only locked. ``replace`` lines say what the build
    takes instead of a module (``[module, by, version]``: a fork at its version, or a folder with no version)."""
    declared, locked, provides, replaced, block = [], [], [], [], None
    for number, line in enumerate(decode(data).splitlines(), start=1):
        code, _, comment = line.partition("//")
        code = code.strip()
        if code.startswith("module ") and block is None:
            provides.append(["go", code.split(None, 1)[1].strip('"`')])
        if block is not None:
            if code == ")":
                block = None
                continue
            words = code.split() if block in ("require", "replace") else []
        elif opened := _GO_BLOCK.match(code):
            block = opened.group(1)
            continue
        else:
            words = code.split()[1:] if code.startswith(("require ", "replace ")) else []
        if "=>" in words:  # replace old [version] => new [version]
            arrow = words.index("=>")
            if arrow and len(words) > arrow + 1:
                replaced.append([words[0], words[arrow + 1], words[arrow + 2] if len(words) > arrow + 2 else ""])
            continue
        if len(words) >= 2:
            module, version = words[0], words[1]
            if comment.strip().startswith("indirect"):
                locked.append(["go", module, version, number, False])
            else:
                declared.append(["go", module, version, "main", number])
    facts = {"declared": declared, "locked": locked, "provides": provides}
    if replaced:
        facts["replaced"] = sorted(replaced)
    return facts


def extract_go_sum(data: bytes) -> dict:
    """Every module version the build may use (a ``/go.mod``-only line counts once with its module)."""
    seen, locked = set(), []
    for number, line in enumerate(decode(data).splitlines(), start=1):
        parts = line.split()
        if len(parts) == 3:
            module, version = parts[0], parts[1].removesuffix("/go.mod")
            if (module, version) not in seen:
                seen.add((module, version))
                locked.append(["go", module, version, number, None])
    return {"declared": [], "locked": locked}


# -- Rust ------------------------------------------------------------------------------------------------------

_CARGO_SCOPES = (("dependencies", "main"), ("dev-dependencies", "dev"), ("build-dependencies", "build"))


def _cargo_spec(value) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        if value.get("workspace"):
            return "workspace"
        return str(value.get("version") or ("path" if "path" in value else "git" if "git" in value else ""))
    return ""


def extract_cargo_toml(data: bytes) -> dict:
    text = decode(data)
    document, lines, declared = tomllib.loads(text), Lines(text), []

    def table(dependencies, scope, path):
        for name, value in sorted((dependencies or {}).items()):
            crate = value.get("package", name) if isinstance(value, dict) else name  # a renamed dependency
            declared.append(["cargo", crate, _cargo_spec(value), scope, lines.toml_key(*path, name)])

    for key, scope in _CARGO_SCOPES:
        table(document.get(key), scope, (key,))
    for target, tables in sorted((document.get("target") or {}).items()):
        for key, scope in _CARGO_SCOPES:
            table((tables or {}).get(key), f"{scope}:{target}", ("target", target, key))
    shared = (document.get("workspace") or {}).get("dependencies") or {}
    table(shared, "workspace", ("workspace", "dependencies"))
    name = (document.get("package") or {}).get("name")
    facts = {"declared": declared, "locked": [], "provides": [["cargo", name]] if isinstance(name, str) else []}
    # A member's ``memmap = { workspace = true }`` names the key, and the workspace's key may be another crate.
    renamed = sorted([key, value["package"]] for key, value in shared.items() if isinstance(value, dict) and isinstance(value.get("package"), str))
    if renamed:
        facts["renamed"] = renamed
    return facts


def extract_cargo_lock(data: bytes) -> dict:
    """Registry and git packages; a package with no ``source`` is one of the workspace's own crates."""
    text = decode(data)
    at = Lines(text).array_tables("package", "name")
    locked = [
        ["cargo", package["name"], str(package.get("version", "")), at[index] if index < len(at) else 1, None]
        for index, package in enumerate(tomllib.loads(text).get("package") or ())
        if isinstance(package, dict) and package.get("name") and package.get("source")
    ]
    return {"declared": [], "locked": locked}


# -- Java ------------------------------------------------------------------------------------------------------


def _xml(data: bytes) -> tuple[ElementTree.Element, dict]:
    """Return the root element of ``data`` and the line each element starts on (``ElementTree`` keeps none)."""
    if b"<!ENTITY" in data:
        raise ValueError("XML entity declarations are not read")  # never expanded: a billion laughs stays a line
    builder, lines = ElementTree.TreeBuilder(), {}
    parser = expat.ParserCreate(namespace_separator="}")

    def start(tag, attributes):
        lines[builder.start("{" + tag if "}" in tag else tag, attributes)] = parser.CurrentLineNumber

    parser.StartElementHandler = start
    parser.EndElementHandler = lambda tag: builder.end("{" + tag if "}" in tag else tag)
    parser.CharacterDataHandler = builder.data
    try:
        parser.Parse(data, True)
    except expat.ExpatError as error:
        raise ElementTree.ParseError(str(error)) from None
    return builder.close(), lines


def _local(tag: str) -> str:
    return tag.rpartition("}")[2]


def _child_text(element, name: str) -> str:
    for child in element:
        if _local(child.tag) == name:
            return (child.text or "").strip()
    return ""


_PROPERTY = re.compile(r"\$\{([^}]+)\}")


def _coordinate(root, parent, name: str) -> str:
    """Return the project's own ``groupId`` or ``version``, else its ``<parent>``'s, which a module inherits."""
    return _child_text(root, name) or (_child_text(parent, name) if parent is not None else "")


def _pom_properties(root, parent) -> dict[str, str]:
    """Return what ``${name}`` stands for in the pom: its ``<properties>`` and the project's own coordinates (a
    module's ``project.version`` is its parent's when it writes none)."""
    properties = {}
    for child in root:
        if _local(child.tag) == "properties":
            properties.update((_local(item.tag), (item.text or "").strip()) for item in child if isinstance(item.tag, str))
    for name in ("version", "groupId"):
        if value := _coordinate(root, parent, name):
            properties.setdefault(f"project.{name}", value)
            properties.setdefault(f"pom.{name}", value)
    if parent is not None and (version := _child_text(parent, "version")):
        properties.setdefault("project.parent.version", version)
    return properties


def _substituted(text: str, properties: dict[str, str]) -> str:
    """Return ``text`` with each ``${name}`` the pom defines put in (a property made of others too); one it does
    not define (a parent's, the build's) stays as written."""
    for _depth in range(5):
        replaced = _PROPERTY.sub(lambda found: properties.get(found[1], found[0]), text)
        if replaced == text:
            break
        text = replaced
    return text


def extract_pom(data: bytes) -> dict:
    """``<dependencies>`` of the project and of its ``<dependencyManagement>`` (scope ``managed``), each
    ``${property}`` put in from the pom's ``<properties>`` (or its own coordinates: ``${project.version}``)."""
    (root, lines), declared = _xml(data), []
    parents = {child: parent for parent in root.iter() for child in parent}
    parent = next((child for child in root if _local(child.tag) == "parent"), None)
    properties = _pom_properties(root, parent)
    for container in root.iter():
        if _local(container.tag) != "dependencies":
            continue
        managed = container in parents and _local(parents[container].tag) == "dependencyManagement"
        for dependency in container:
            if _local(dependency.tag) != "dependency":
                continue
            group, artifact = (_substituted(_child_text(dependency, name), properties) for name in ("groupId", "artifactId"))
            if group and artifact:
                scope = "managed" if managed else (_child_text(dependency, "scope") or "compile")
                line = next((lines[child] for child in dependency if _local(child.tag) == "artifactId"), lines[dependency])
                version = _substituted(_child_text(dependency, "version"), properties)
                declared.append(["maven", f"{group}:{artifact}", version, scope, line])
    group, artifact = _coordinate(root, parent, "groupId"), _child_text(root, "artifactId")
    return {"declared": declared, "locked": [], "provides": [["maven", f"{group}:{artifact}"]] if group and artifact else []}


def extract_gradle_catalog(data: bytes) -> dict:
    """``gradle/libs.versions.toml``: each library with its version, a ``version.ref`` resolved."""
    text = decode(data)
    document, lines, declared = tomllib.loads(text), Lines(text), []
    versions = document.get("versions") or {}
    for alias, entry in sorted((document.get("libraries") or {}).items()):
        if isinstance(entry, str):
            group, _, rest = entry.partition(":")
            artifact, _, version = rest.partition(":")
            module = f"{group}:{artifact}"
        elif isinstance(entry, dict):
            module = entry.get("module") or f"{entry.get('group', '')}:{entry.get('name', '')}"
            version = entry.get("version", "")
            if isinstance(version, dict):
                version = versions.get(version.get("ref"), "") if "ref" in version else version.get("strictly") or version.get("require", "")
        else:
            continue
        declared.append(["maven", module, str(version) if not isinstance(version, dict) else "", "main", lines.toml_key("libraries", alias)])
    return {"declared": declared, "locked": []}


# -- .NET ------------------------------------------------------------------------------------------------------


def nuget_name(name: str) -> str:
    return name.lower()  # NuGet package ids compare case-insensitively


# Central Package Management (``Directory.Packages.props``): a ``PackageVersion`` gives the version of the
# projects' version-less ``PackageReference``s below it; a ``GlobalPackageReference`` is every project's.
_NUGET_ITEMS = {"PackageReference": "main", "GlobalPackageReference": "main", "PackageVersion": "managed"}


def extract_csproj(data: bytes) -> dict:
    """A project's (or a ``Directory.Build.props``') package references, and the central versions of a
    ``Directory.Packages.props`` (scope ``managed``); ``VersionOverride`` is the reference's own version."""
    (root, lines), declared = _xml(data), []
    for item in root.iter():
        scope = _NUGET_ITEMS.get(_local(item.tag))
        if scope and item.get("Include"):
            version = item.get("VersionOverride") or item.get("Version") or _child_text(item, "Version")
            declared.append(["nuget", nuget_name(item.get("Include")), version, scope, lines[item]])
    return {"declared": declared, "locked": []}


def extract_nuget_lock(data: bytes) -> dict:
    text = decode(data)
    lines, locked, seen = Lines(text), [], set()
    for framework, packages in sorted((json.loads(text).get("dependencies") or {}).items()):
        for name, entry in sorted((packages or {}).items()):
            entry = entry or {}
            if entry.get("type") == "Project" or (name, entry.get("resolved")) in seen:
                continue
            seen.add((name, entry.get("resolved")))
            locked.append(["nuget", nuget_name(name), str(entry.get("resolved", "")), lines.json_key("dependencies", framework, name), entry.get("type") == "Direct"])
    return {"declared": [], "locked": locked}


# -- PHP -------------------------------------------------------------------------------------------------------


def _composer_package(name: str) -> bool:
    return "/" in name  # "php", "ext-json" and "lib-icu" are the platform, not packages


def extract_composer_json(data: bytes) -> dict:
    text = decode(data)
    document, lines, declared = json.loads(text), Lines(text), []
    for key, scope in (("require", "main"), ("require-dev", "dev")):
        for name, spec in sorted((document.get(key) or {}).items()):
            if _composer_package(name):
                declared.append(["composer", name.lower(), str(spec), scope, lines.json_key(key, name)])
    name = document.get("name")
    return {"declared": declared, "locked": [], "provides": [["composer", name.lower()]] if isinstance(name, str) and _composer_package(name) else []}


def extract_composer_lock(data: bytes) -> dict:
    text = decode(data)
    document, lines = json.loads(text), Lines(text)
    locked = [
        ["composer", package["name"].lower(), str(package.get("version", "")), lines.of(f'"name": "{package["name"]}"'), None]
        for key in ("packages", "packages-dev")
        for package in document.get(key) or ()
        if isinstance(package, dict) and package.get("name")
    ]
    return {"declared": [], "locked": locked}


# -- Ruby ------------------------------------------------------------------------------------------------------

_GEM_SPEC = re.compile(r"^    ([^\s(]+) \(([^)]+)\)$")
_GEM_DEPENDENCY = re.compile(r"^  ([^\s(!]+)")
LOCKED_GEM_SOURCES = ("GEM", "GIT")


def extract_gemfile_lock(data: bytes) -> dict:
    """The gems under the ``specs:`` (four spaces in) of a ``GEM`` or ``GIT`` source, direct when ``DEPENDENCIES``
    names them. A ``PATH`` source's gems are the repository's own (its gemspec), as a Cargo crate with no source is.
    """
    section, specs, direct = None, [], set()
    for number, line in enumerate(decode(data).splitlines(), start=1):
        if line and not line.startswith(" "):
            section = line.strip()
        elif section in LOCKED_GEM_SOURCES and (found := _GEM_SPEC.match(line)):
            specs.append((*found.groups(), number))  # a platform gem keeps its platform: "1.15.4-x86_64-linux"
        elif section == "DEPENDENCIES" and (found := _GEM_DEPENDENCY.match(line)):
            direct.add(found.group(1))  # "rails!" is a gem from a GIT or PATH source
    return {"declared": [], "locked": [["gem", name, version, line, name in direct] for name, version, line in specs]}


POSITIONS = "2"  # as in manifests.py: an entry's own line, not the first that names it
PROVIDES = "3"  # the package the manifest itself is (``provides``): a dependency on it is in the repository
SETUP_PY = Extractor("setup.py", PROVIDES, extract_setup_py)  # 2: names bound once to a literal; tests_require; 3: provides
GO_MOD = Extractor("go.mod", "3", extract_go_mod)  # 2: provides; 3: replace directives
GO_SUM = Extractor("go.sum", VERSION, extract_go_sum)
CARGO_TOML = Extractor("cargo.toml", "4", extract_cargo_toml)  # 3: provides; 4: the workspace's renamed crates
CARGO_LOCK = Extractor("cargo.lock", POSITIONS, extract_cargo_lock)
POM = Extractor("pom.xml", "4", extract_pom)  # 3: provides; 4: a version's ${property} put in
GRADLE_CATALOG = Extractor("gradle-catalog", POSITIONS, extract_gradle_catalog)
CSPROJ = Extractor("csproj", "3", extract_csproj)  # 2: positions; 3: central package management
NUGET_LOCK = Extractor("nuget-lock", POSITIONS, extract_nuget_lock)
COMPOSER_JSON = Extractor("composer.json", PROVIDES, extract_composer_json)
COMPOSER_LOCK = Extractor("composer.lock", VERSION, extract_composer_lock)
GEMFILE_LOCK = Extractor("gemfile.lock", "2", extract_gemfile_lock)  # 2: gems from a GIT source
