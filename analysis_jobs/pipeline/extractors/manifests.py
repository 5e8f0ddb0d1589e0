"""
Dependency manifests and lockfiles: what a project declares (a name and a version range) and what it locked
(a name and an exact version), with ecosystem-qualified names (``pypi``, ``npm``) normalised as each registry
compares them.

PEP 508 requirements are read with ``packaging``, TOML with the standard ``tomllib``, YAML with PyYAML's safe
loader, JSON with ``json``, ``setup.cfg`` with ``configparser``; ``yarn.lock`` version 1 has its own line format
(no maintained Python parser), read here; version 2+ is YAML. Each output row carries the 1-based line of its own
entry, found by its path of keys where the parser reports no positions (``positions.py``).
"""

import configparser
import itertools
import json
import posixpath
import re
import tomllib

from packaging.requirements import InvalidRequirement, Requirement

from .base import Extractor, decode
from .positions import Lines

VERSION = "1"

_PYPI_NAME = re.compile(r"[-_.]+")
_EGG = re.compile(r"[#&]egg=([A-Za-z0-9][A-Za-z0-9._-]*)")


def pypi_name(name: str) -> str:
    """Return a PyPI project name normalised as PEP 503 compares them."""
    return _PYPI_NAME.sub("-", name).lower()


def requirement(text: str):
    """Return ``(name, spec)`` for a PEP 508 string, or None if it is not one."""
    try:
        requirement = Requirement(text)
    except InvalidRequirement:
        return None
    spec = str(requirement.specifier)
    if requirement.url:
        spec = spec or "url"
    if requirement.marker is not None:
        spec = f"{spec}; {requirement.marker}" if spec else f"; {requirement.marker}"
    return pypi_name(requirement.name), spec


# -- Python --------------------------------------------------------------------------------------------------


def extract_requirements(data: bytes) -> dict:
    declared, logical, first = [], "", 0
    for number, raw in enumerate(decode(data).splitlines(), start=1):
        line = raw.split(" #", 1)[0].strip() if not raw.lstrip().startswith("#") else ""
        if not logical:
            first = number
        if line.endswith("\\"):
            logical += line[:-1] + " "
            continue
        logical += line
        entry, logical = logical.strip(), ""
        if not entry:
            continue
        if entry.startswith("-"):
            egg = _EGG.search(entry)
            if entry.startswith(("-e", "--editable")) and egg:
                declared.append(["pypi", pypi_name(egg.group(1)), "editable", first])
            continue  # -r, -c, --index-url and other options name no project
        entry = entry.split(" --", 1)[0].strip()  # per-requirement options such as --hash
        parsed = requirement(entry)
        if parsed is None:
            egg = _EGG.search(entry)
            if egg:
                declared.append(["pypi", pypi_name(egg.group(1)), "url", first])
            continue
        declared.append(["pypi", parsed[0], parsed[1], first])
    return {"declared": [row[:3] + ["main", row[3]] for row in declared], "locked": []}


def _pep508_list(values, scope, lines, declared, first_line: int = 1):
    """Add the rows of a list of PEP 508 strings, each at the first line from ``first_line`` on that holds it."""
    for value in values or ():
        if not isinstance(value, str):
            continue  # PEP 735 include-group tables
        parsed = requirement(value)
        if parsed is not None:
            declared.append(["pypi", parsed[0], parsed[1], scope, lines.of(value, first_line - 1)])


def _poetry_table(table, scope, lines, declared, path: tuple[str, ...]):
    """Add the rows of a Poetry or Pipfile table of ``name = spec``, which is at ``path`` in the TOML document."""
    for name, value in (table or {}).items():
        if name.lower() == "python":
            continue
        if isinstance(value, str):
            spec = value
        elif isinstance(value, dict):
            spec = str(value.get("version") or ("path" if "path" in value else "git" if "git" in value else "url" if "url" in value else ""))
            if value.get("optional"):
                scope = "optional" if scope == "main" else scope
        else:
            spec = "*"  # a list of constraints by marker
        declared.append(["pypi", pypi_name(name), spec, scope, lines.toml_key(*path, name)])


def extract_pyproject(data: bytes) -> dict:
    text = decode(data)
    document = tomllib.loads(text)
    lines, declared = Lines(text), []
    project = document.get("project") or {}
    _pep508_list(project.get("dependencies"), "main", lines, declared, lines.toml_key("project", "dependencies"))
    for extra, values in sorted((project.get("optional-dependencies") or {}).items()):
        _pep508_list(values, f"optional:{extra}", lines, declared, lines.toml_key("project", "optional-dependencies", extra))
    for group, values in sorted((document.get("dependency-groups") or {}).items()):
        _pep508_list(values, f"group:{group}", lines, declared, lines.toml_key("dependency-groups", group))
    # What building the project needs (PEP 518), and the development groups uv and PDM kept before PEP 735.
    _pep508_list((document.get("build-system") or {}).get("requires"), "build", lines, declared, lines.toml_key("build-system", "requires"))
    tool = document.get("tool") or {}
    _pep508_list((tool.get("uv") or {}).get("dev-dependencies"), "dev", lines, declared, lines.toml_key("tool", "uv", "dev-dependencies"))
    for group, values in sorted(((tool.get("pdm") or {}).get("dev-dependencies") or {}).items()):
        _pep508_list(values, f"group:{group}", lines, declared, lines.toml_key("tool", "pdm", "dev-dependencies", group))
    poetry = tool.get("poetry") or {}
    for key, scope in (("dependencies", "main"), ("dev-dependencies", "dev")):
        _poetry_table(poetry.get(key), scope, lines, declared, ("tool", "poetry", key))
    for group, table in sorted((poetry.get("group") or {}).items()):
        _poetry_table((table or {}).get("dependencies"), f"group:{group}", lines, declared, ("tool", "poetry", "group", group, "dependencies"))
    name = project.get("name") or poetry.get("name")
    facts = {"declared": declared, "locked": [], "provides": [["pypi", pypi_name(name)]] if isinstance(name, str) else []}
    if files := _requirement_files(tool):
        facts["requirement_files"] = files
    return facts


def _requirement_files(tool: dict) -> list:
    """Return ``[file, scope]`` for each requirements file the build reads the project's dependencies from:
    setuptools' ``dynamic`` ``{file = [...]}`` and the hatch-requirements-txt hook (``optional:NAME`` for an extra's)."""
    found = []

    def add(files, scope):
        for file in [files] if isinstance(files, str) else files if isinstance(files, list) else ():
            if isinstance(file, str):
                found.append([file, scope])

    dynamic = (tool.get("setuptools") or {}).get("dynamic") or {}
    if isinstance(dynamic.get("dependencies"), dict):
        add(dynamic["dependencies"].get("file"), "main")
    for extra, value in sorted((dynamic.get("optional-dependencies") or {}).items()):
        if isinstance(value, dict):
            add(value.get("file"), f"optional:{extra}")
    hook = (((tool.get("hatch") or {}).get("metadata") or {}).get("hooks") or {}).get("requirements_txt")
    if isinstance(hook, dict):
        add(hook.get("files") or hook.get("filename") or "requirements.txt", "main")
        for extra, files in sorted((hook.get("optional-dependencies") or {}).items()):
            add(files, f"optional:{extra}")
    return sorted(found)


def extract_setup_cfg(data: bytes) -> dict:
    text = decode(data)
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    parser.read_string(text)
    lines, declared = Lines(text), []

    def entries(value):
        return [line.strip() for line in (value or "").splitlines() if line.strip() and not line.strip().startswith("#")]

    if parser.has_option("options", "install_requires"):
        _pep508_list(entries(parser.get("options", "install_requires")), "main", lines, declared)
    if parser.has_section("options.extras_require"):
        for extra, value in sorted(parser.items("options.extras_require")):
            _pep508_list(entries(value), f"optional:{extra}", lines, declared)
    name = parser.get("metadata", "name", fallback="").strip()
    return {"declared": declared, "locked": [], "provides": [["pypi", pypi_name(name)]] if name else []}


def extract_integration_manifest(data: bytes) -> dict:
    """A Home Assistant integration's ``manifest.json``: the PEP 508 ``requirements`` it installs, beside its
    ``domain``. Any other ``manifest.json`` (a web app's, a browser extension's) declares nothing."""
    text = decode(data)
    document, lines, declared = json.loads(text), Lines(text), []
    if isinstance(document, dict) and isinstance(document.get("domain"), str) and isinstance(document.get("requirements"), list):
        _pep508_list(document["requirements"], "main", lines, declared)
    return {"declared": declared, "locked": []}


def extract_pipfile(data: bytes) -> dict:
    text = decode(data)
    document = tomllib.loads(text)
    lines, declared = Lines(text), []
    for section, scope in (("packages", "main"), ("dev-packages", "dev")):
        _poetry_table(document.get(section), scope, lines, declared, (section,))
    return {"declared": declared, "locked": []}


def extract_pipfile_lock(data: bytes) -> dict:
    text = decode(data)
    document = json.loads(text)
    lines, locked = Lines(text), []
    for section in ("default", "develop"):
        for name, entry in sorted((document.get(section) or {}).items()):
            version = str((entry or {}).get("version") or "").lstrip("=")
            locked.append(["pypi", pypi_name(name), version, lines.json_key(section, name), None])
    return {"declared": [], "locked": locked}


def extract_poetry_lock(data: bytes) -> dict:
    """Every package but those from a local folder (``[package.source] type = "directory"``): a path dependency
    is a project of the repository (or beside it), not a version the lock pins, as a Cargo crate with no source."""
    text = decode(data)
    document = tomllib.loads(text)
    at = Lines(text).array_tables("package", "name")
    locked = [
        ["pypi", pypi_name(package["name"]), str(package.get("version", "")), at[index] if index < len(at) else 1, None]
        for index, package in enumerate(document.get("package") or ())
        if isinstance(package, dict) and package.get("name") and (package.get("source") or {}).get("type") != "directory"
    ]
    return {"declared": [], "locked": locked}


def extract_uv_lock(data: bytes) -> dict:
    """The packages the roots (the workspace's ``editable`` and ``virtual`` projects) lock, direct when a root
    depends on them; a package from a local folder (``source = { directory = ... }``) is left out, as poetry's."""
    text = decode(data)
    document = tomllib.loads(text)
    at = Lines(text).array_tables("package", "name")
    packages = [(index, package) for index, package in enumerate(document.get("package") or ()) if isinstance(package, dict) and package.get("name")]
    roots = [package for _, package in packages if {"editable", "virtual"} & set((package.get("source") or {}).keys())]
    direct = set()
    for root in roots:
        for dependency in root.get("dependencies") or ():
            direct.add(pypi_name(dependency.get("name", "")))
        for group in (root.get("dev-dependencies") or {}).values():
            direct.update(pypi_name(dependency.get("name", "")) for dependency in group)
        for group in (root.get("optional-dependencies") or {}).values():
            direct.update(pypi_name(dependency.get("name", "")) for dependency in group)
    root_names = {pypi_name(root["name"]) for root in roots}
    locked = []
    for index, package in packages:
        name = pypi_name(package["name"])
        if name in root_names or "directory" in (package.get("source") or {}):
            continue
        locked.append(["pypi", name, str(package.get("version", "")), at[index] if index < len(at) else 1, name in direct if roots else None])
    return {"declared": [], "locked": locked}


# -- npm -----------------------------------------------------------------------------------------------------

NPM_SCOPES = (
    ("dependencies", "main"),
    ("devDependencies", "dev"),
    ("peerDependencies", "peer"),
    ("optionalDependencies", "optional"),
)


def extract_package_json(data: bytes) -> dict:
    text = decode(data)
    document = json.loads(text)
    if not isinstance(document, dict):
        raise ValueError("package.json is not an object")
    lines, declared = Lines(text), []
    for field, scope in NPM_SCOPES:
        for name, spec in sorted((document.get(field) or {}).items()):
            declared.append(["npm", name, str(spec), scope, lines.json_key(field, name)])
    facts = {"declared": declared, "locked": []}
    imports = document.get("imports")
    if isinstance(imports, dict):  # Node's subpath imports: "#config" is the package's own ./src/config.js
        facts["subpath_imports"] = sorted(
            [key, targets] for key, value in imports.items() if key.startswith("#") and (targets := _export_targets(value))
        )
    # Bun's catalogs, in the root package.json's "workspaces" (or at its top level), as pnpm-workspace.yaml's are.
    workspaces = document.get("workspaces")
    holder = workspaces if isinstance(workspaces, dict) and ("catalog" in workspaces or "catalogs" in workspaces) else document
    if catalogs := _catalog_rows(holder.get("catalog"), holder.get("catalogs")):
        facts["catalogs"] = catalogs
    if isinstance(document.get("name"), str):  # a package of its own: a workspace's imports of it stay in the repo
        entry, subpaths = _package_exports(document)
        facts["package"] = [document["name"], entry, subpaths]
        facts["provides"] = [["npm", document["name"]]]
    return facts


EXPORT_CONDITIONS = ("types", "import", "module", "default", "require")  # the repository's sources first


def _export_targets(value) -> list[str]:
    """Return the files an ``exports`` (or ``imports``) value names, in the order a resolver tries them: a string,
    the ones of a fallback list in its order, or of an object's conditions, the preferred ones first
    (``{"types": ..., "import": ..., "default": ...}``) and then the others in the object's order, as Node takes
    them (``{"node": ..., "browser": ...}``), nested or not; none for ``null``. The linker opens the first of
    them that the tree holds: a package's ``types`` may name a declaration file it never committed."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        items = value
    elif isinstance(value, dict):
        items = [value[key] for key in EXPORT_CONDITIONS if key in value]
        items += [item for key, item in value.items() if key not in EXPORT_CONDITIONS]
    else:
        return []
    return list(dict.fromkeys(target for item in items for target in _export_targets(item)))


def _package_exports(document: dict) -> tuple[list, list]:
    """Return the files a bare import of the package may open (``exports["."]``'s, then ``module`` and ``main``),
    and its other ``exports`` subpaths as sorted ``[subpath, files]`` pairs (``["./button", ["./src/button.tsx"]]``;
    a pattern keeps its ``*``: ``["./icons/*", ["./src/icons/*.tsx"]]``)."""
    exports, subpaths = document.get("exports"), {}
    if isinstance(exports, dict) and any(key.startswith(".") for key in exports):
        subpaths = {key: targets for key, value in exports.items() if key.startswith("./") and (targets := _export_targets(value))}
        exports = exports.get(".")
    fields = [entry for entry in (document.get("module"), document.get("main")) if isinstance(entry, str)]
    return list(dict.fromkeys([*_export_targets(exports), *fields])), sorted(subpaths.items())


def _without_comments(text: str) -> str:
    """Return JSON-with-comments (``tsconfig.json``) as JSON: comments and trailing commas dropped, strings kept."""
    out, index, length = [], 0, len(text)
    while index < length:
        char = text[index]
        if char == '"':
            end = index + 1
            while end < length and text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            out.append(text[index:end + 1])
            index = end + 1
        elif text.startswith("//", index):
            newline = text.find("\n", index)
            index = length if newline < 0 else newline
        elif text.startswith("/*", index):
            close = text.find("*/", index + 2)
            out.append("\n" * text.count("\n", index, length if close < 0 else close))  # keep the line numbers
            index = length if close < 0 else close + 2
        else:
            out.append(char)
            index += 1
    return _TRAILING_COMMA.sub(r"\1", "".join(out))


_TRAILING_COMMA = re.compile(r",(\s*[}\]])")


_GLOB = re.compile(r"[*?\[{]")


def _included_root(include) -> str | None:
    """Return the folder that holds everything ``include`` names (``["src/**/*"]``: ``src``), as TypeScript
    takes the common folder of its inputs for ``rootDir`` when none is written; None without an ``include``."""
    if not isinstance(include, list) or not include or not all(isinstance(pattern, str) for pattern in include):
        return None
    folders = []
    for pattern in include:
        parts = posixpath.normpath(pattern).split("/")
        literal = list(itertools.takewhile(lambda part: not _GLOB.search(part), parts))
        if literal == parts and "." in parts[-1]:
            literal.pop()  # a file ("src/index.ts"): its folder
        folders.append("/".join(part for part in literal if part != "."))
    return posixpath.commonpath(folders) or "."


def extract_tsconfig(data: bytes) -> dict:
    """``compilerOptions.paths`` aliases and ``baseUrl``: imports through them are the repository's own files;
    ``outDir`` and ``declarationDir`` with ``rootDir`` (else the folder ``include`` names): the folders the build
    writes, each with the folder of the sources it writes them from (``lib/index.js`` is built from ``src/index.ts``)."""
    document = json.loads(_without_comments(decode(data)))
    options = (document.get("compilerOptions") or {}) if isinstance(document, dict) else {}
    paths = options.get("paths") or {}
    aliases = [[alias, [target for target in targets if isinstance(target, str)]] for alias, targets in sorted(paths.items()) if isinstance(targets, list)]
    base_url, root = (options.get(option) for option in ("baseUrl", "rootDir"))
    if not isinstance(root, str) and isinstance(document, dict):
        root = _included_root(document.get("include"))
    outputs = sorted({folder for option in ("outDir", "declarationDir") if isinstance(folder := options.get(option), str)})
    return {
        "aliases": aliases,
        "base_url": base_url if isinstance(base_url, str) else None,
        "outputs": [[folder, root] for folder in outputs] if isinstance(root, str) else [],
    }


def _npm_name(path: str) -> str:
    return path.rsplit("node_modules/", 1)[-1]


def extract_package_lock(data: bytes) -> dict:
    text = decode(data)
    document = json.loads(text)
    lines, locked = Lines(text), []
    packages = document.get("packages")
    if isinstance(packages, dict):
        root = packages.get("") or {}
        direct = set()
        for field, _scope in NPM_SCOPES:
            direct.update((root.get(field) or {}).keys())
        for path, entry in sorted(packages.items()):
            if not path or not isinstance(entry, dict) or entry.get("link"):
                continue
            if "node_modules/" not in path:
                continue  # a workspace package of this repository
            name = entry.get("name") or _npm_name(path)
            top_level = path.count("node_modules/") == 1 and path.startswith("node_modules/")
            locked.append(["npm", name, str(entry.get("version", "")), lines.json_key("packages", path), top_level and name in direct])
        return {"declared": [], "locked": locked}

    def walk(dependencies, path):
        for name, entry in sorted((dependencies or {}).items()):
            if isinstance(entry, dict):
                locked.append(["npm", name, str(entry.get("version", "")), lines.json_key(*path, name), None])
                walk(entry.get("dependencies"), (*path, name, "dependencies"))

    walk(document.get("dependencies"), ("dependencies",))
    return {"declared": [], "locked": locked}


def _npm_spec_name(specifier: str) -> str:
    """Return the package name of a ``name@range`` specifier (scoped names keep their leading ``@``)."""
    specifier = specifier.strip().strip('"').strip("'")
    at = specifier.find("@", 1)
    return specifier[:at] if at > 0 else specifier


def extract_yarn_lock(data: bytes) -> dict:
    text = decode(data)
    if "__metadata:" in text:
        return _yarn_berry(text)
    locked, names, line_of_entry = [], [], 0
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if not line.startswith(" ") and line.rstrip().endswith(":"):
            names = sorted({_npm_spec_name(part) for part in line.rstrip()[:-1].split(",") if part.strip()})
            line_of_entry = number
        elif line.startswith("  ") and not line.startswith("   ") and line.strip().startswith("version ") and names:
            version = line.strip()[len("version "):].strip().strip('"')
            locked.extend(["npm", name, version, line_of_entry, None] for name in names)
            names = []
    return {"declared": [], "locked": locked}


def _yarn_berry(text: str) -> dict:
    import yaml

    document = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) or {}
    lines, locked = Lines(text), []
    for key, entry in sorted(document.items(), key=lambda item: str(item[0])):
        if key == "__metadata" or not isinstance(entry, dict):
            continue
        if str(entry.get("linkType", "")) == "soft" or "@workspace:" in str(entry.get("resolution", "")):
            continue
        names = sorted({_npm_spec_name(part) for part in str(key).split(",") if part.strip()})
        for name in names:
            locked.append(["npm", name, str(entry.get("version", "")), lines.yaml_key(str(key)), None])
    return {"declared": [], "locked": locked}


def _pnpm_key(key: str):
    key = key.split("(", 1)[0].lstrip("/")
    at = key.find("@", 1)
    if at > 0:
        return key[:at], key[at + 1:]
    name, _, version = key.rpartition("/")  # lockfile v5: /name/version
    return name, version


def extract_pnpm_workspace(data: bytes) -> dict:
    """A pnpm workspace's catalogs, as ``[catalog, name, range]`` rows: ``catalog`` is the one named ``default``,
    ``catalogs`` the named ones. A ``package.json`` that declares ``"react": "catalog:"`` takes the range from it."""
    import yaml

    document = yaml.load(decode(data), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) or {}
    if not isinstance(document, dict):
        return {"catalogs": []}
    return {"catalogs": _catalog_rows(document.get("catalog"), document.get("catalogs"))}


def _catalog_rows(default, named) -> list:
    """Return the ``[catalog, name, range]`` rows of a default catalog and the named ones (pnpm's and Bun's)."""
    catalogs = {str(catalog): entries for catalog, entries in named.items()} if isinstance(named, dict) else {}
    if default:
        catalogs["default"] = default  # one of the two spellings of the default catalog is taken
    rows = [
        [catalog, str(name), str(spec)]
        for catalog, entries in catalogs.items() if isinstance(entries, dict)
        for name, spec in entries.items() if spec is not None
    ]
    return sorted(rows)


def extract_pnpm_lock(data: bytes) -> dict:
    import yaml

    text = decode(data)
    document = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) or {}
    lines, locked = Lines(text), []
    direct: dict[str, set] = {}
    importers = document.get("importers") or {".": document}
    for importer in importers.values():
        for field in ("dependencies", "devDependencies", "optionalDependencies"):
            for name, value in ((importer or {}).get(field) or {}).items():
                version = value.get("version") if isinstance(value, dict) else value
                direct.setdefault(name, set()).add(str(version).split("(", 1)[0])
    packages = document.get("packages") or {}
    for key in sorted(packages, key=str):
        name, version = _pnpm_key(str(key))
        if not name:
            continue
        locked.append(["npm", name, version, lines.yaml_key(str(key)), version in direct.get(name, ())])
    return {"declared": [], "locked": locked}


# The ``POSITIONS`` version of each extractor below whose rows took the line of the first mention of a name, not
# of the entry itself (a package among another's dependencies in a lockfile, one name in two tables).
POSITIONS = "2"
REQUIREMENTS = Extractor("requirements", VERSION, extract_requirements)
# pyproject 3: provides the project's own name; 4: build-system requires, uv's and PDM's dev-dependencies;
# 5: the requirements files the build reads its dependencies from
PYPROJECT = Extractor("pyproject", "5", extract_pyproject)
SETUP_CFG = Extractor("setup.cfg", "2", extract_setup_cfg)  # 2: provides
INTEGRATION_MANIFEST = Extractor("integration-manifest", "1", extract_integration_manifest)
PIPFILE = Extractor("pipfile", POSITIONS, extract_pipfile)
PIPFILE_LOCK = Extractor("pipfile.lock", POSITIONS, extract_pipfile_lock)
POETRY_LOCK = Extractor("poetry.lock", "3", extract_poetry_lock)  # 3: no package from a local folder
UV_LOCK = Extractor("uv.lock", "3", extract_uv_lock)  # 3: no package from a local folder
# package.json 2: the package's own name and entry; 3: positions; 4: subpath exports; 5: provides; 6: subpath
# imports; 7: a target under conditions none of ``EXPORT_CONDITIONS`` names is the first condition's; 8: Bun's catalogs;
# 9: every condition's file, in the order a resolver prefers them
PACKAGE_JSON = Extractor("package.json", "9", extract_package_json)
# tsconfig 2: the build's output folders, with the sources'; 3: the sources' folder from ``include`` without ``rootDir``
TSCONFIG = Extractor("tsconfig", "3", extract_tsconfig)
PACKAGE_LOCK = Extractor("package-lock", POSITIONS, extract_package_lock)
YARN_LOCK = Extractor("yarn.lock", POSITIONS, extract_yarn_lock)
PNPM_LOCK = Extractor("pnpm-lock", POSITIONS, extract_pnpm_lock)
PNPM_WORKSPACE = Extractor("pnpm-workspace", "1", extract_pnpm_workspace)
