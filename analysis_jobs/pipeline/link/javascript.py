"""
JavaScript and TypeScript: a module node per file, its imports matched to files or packages, its exports and calls.

A bare import is the repository's own when a ``tsconfig.json`` ``paths`` alias covers it (the nearest config
above the importing file) and opens a file; an alias into ``node_modules``
(``"react": ["node_modules/preact/compat"]``) imports the package there; where the alias opens nothing,
TypeScript goes on without it, so a catch-all ``"*": ["./*"]`` leaves ``react`` to the packages, and a package
the repository neither declares nor locks is then the alias's missing file. A bare import is the repository's
own too when it names a workspace package (a ``package.json`` with that ``name``, whose ``exports`` say which
file each subpath opens: of a target's conditions, the first file the tree holds); only what is neither becomes
``dep:npm:NAME``. An import of ``#name`` is one of Node's subpath imports: the ``imports`` of the nearest
``package.json`` map it to a file of that package (or to a package), and it is never a dependency of its own.

An import of a file the build writes and the tree does not hold (a workspace package whose ``main`` is
``lib/index.js``) goes to the source the build writes it from, where a tsconfig's ``outDir`` and ``rootDir`` say
which (``src/index.ts``). In a SvelteKit project (the folder of a ``svelte.config.js``), ``$lib`` is its
``src/lib`` and ``$app``, ``$env`` and ``$service-worker`` are modules of ``@sveltejs/kit``. Types imported from a
package the repository does not declare (a type-only import, or any import of a ``.d.ts``) come from the
``@types`` package it declares, if any. A package named by ``npm:react@19`` (Deno's, Bun's) or by its URL on a
CDN that serves npm's packages is that package. A query (Vite's ``./theme.css?raw``) opens the file without it.
A relative import of a file that is not a script (``./data.json``, ``./App.css``, ``./logo.svg``,
``./Button.vue``), as Node and bundlers load them, goes to that file's node.
"""

import posixpath
import re
from itertools import chain

from .dependencies import Dependencies
from .family import Family, evidence, extractor_name, folders_above, is_module_file, service_calls, whole_file

NODE_BUILTINS = frozenset(
    "assert async_hooks buffer child_process cluster console constants crypto dgram diagnostics_channel dns domain "
    "events fs http http2 https inspector module net os path perf_hooks process punycode querystring readline repl "
    "stream string_decoder sys timers tls trace_events tty url util v8 vm wasi worker_threads zlib test".split()
)
JS_SUFFIXES = (".js", ".mjs", ".cjs", ".jsx", ".ts", ".tsx", ".mts", ".cts", ".d.ts", ".d.mts", ".d.cts")
# What npm accepts in a package's name (and its scope): the characters a URL keeps as they are.
NPM_NAME = re.compile(r"(@[\w.!~*'()-]+/)?[\w.!~*'()-]+", re.ASCII)
# A package of npm's named by Deno's and Bun's ``npm:react@19``, or by the URL of a CDN that serves npm's packages
# (``https://cdn.jsdelivr.net/npm/mp4box@2.3.0/+esm`` in three's examples, ``https://esm.sh/react@19``).
NPM_URL = re.compile(
    r"(?:npm:|https?://(?:cdn\.jsdelivr\.net/npm/|unpkg\.com/|esm\.sh/|cdn\.skypack\.dev/|ga\.jspm\.io/npm:))"
    r"((?:@[^/@]+/)?[^/@?#]+)"
)
# SvelteKit's modules: its project's own ``src/lib``, and the ones the kit itself provides.
SVELTEKIT_LIB = "$lib"
SVELTEKIT_MODULES = frozenset(("$app", "$env", "$service-worker"))
DECLARATION_SUFFIXES = (".d.ts", ".d.mts", ".d.cts")
BUILT_SUFFIXES = (".d.ts", ".d.mts", ".d.cts", ".js", ".mjs", ".cjs", ".jsx")  # what tsc writes, declarations first
SCRIPT_EXTRACTORS = frozenset(("javascript", "typescript", "tsx"))
# The files besides scripts that an import may load: JSON (Node), styles, images, fonts and other assets, and the
# components of frameworks with their own files (bundlers). Only these are learnt, so that adding any other
# file (a README, a text file, a Go source) leaves a re-analysis spliced.
ASSET_SUFFIXES = frozenset(
    ".json .json5 .css .scss .sass .less .styl .svg .png .jpg .jpeg .gif .webp .avif .ico .bmp .woff .woff2 .ttf "
    ".otf .eot .mp3 .mp4 .webm .wav .wasm .graphql .gql .mdx .vue .svelte .astro .glsl .wgsl .node".split()
)


def star_match(pattern: str, text: str) -> str | None:
    """Return what the one ``*`` of ``pattern`` stands for in ``text`` (``"./icons/*"`` in ``"./icons/arrow"``:
    ``"arrow"``), or None when ``pattern`` has no ``*`` or does not match."""
    prefix, star, suffix = pattern.partition("*")
    if star and text.startswith(prefix) and text.endswith(suffix) and len(text) >= len(prefix) + len(suffix):
        return text[len(prefix):len(text) - len(suffix)]
    return None


def best_match(keys, text: str):
    """Return ``(value, what the * matched)`` for the key of ``keys`` (pairs of key and value) that covers
    ``text`` as Node picks an ``exports`` key and TypeScript a ``paths`` alias: the key itself (the match then
    None), else the pattern with the longest part before its ``*``. None when no key covers it."""
    best = None  # (the length before the pattern's *, its value, what the * matched)
    for key, value in keys:
        if key == text:
            return value, None
        matched = star_match(key, text)
        if matched is not None and (best is None or key.index("*") > best[0]):
            best = (key.index("*"), value, matched)
    return best[1:] if best else None


def mapped(keys: list, text: str) -> list[str] | None:
    """Return the files a package's ``exports`` (or ``imports``) map ``text`` (``"./button"``, ``"#config"``) to, in
    the order a resolver tries them; None when no key covers it."""
    found = best_match(keys, text)
    if found is None:
        return None
    targets, matched = found
    return targets if matched is None else [target.replace("*", matched) for target in targets]


def is_script(record) -> bool:
    return is_module_file(record, ("javascript", "typescript"), SCRIPT_EXTRACTORS)


class JavaScript(Family):
    def __init__(self, records, dependencies: Dependencies):
        super().__init__(records)
        self.dependencies = dependencies
        self.paths = {record.path for record in records if is_script(record)}
        self.kits = {  # every SvelteKit project's folder
            posixpath.dirname(path) for path in self.paths if posixpath.basename(path).startswith("svelte.config.")
        }
        self.assets = {
            record.path for record in records
            if posixpath.splitext(record.path)[1].lower() in ASSET_SUFFIXES and record.path not in self.paths
        }
        self.packages: dict[str, tuple[str, list, list]] = {}  # workspace package name: (folder, entries, subpaths)
        self.entries: dict[str, list[str]] = {}  # a package's folder: the files a bare import of it may open
        self.configs: dict[str, list[tuple[str, list[str]]]] = {}  # tsconfigs' folder: [(alias, target folders)]
        self.scopes: dict[str, list] = {}  # every package.json's folder: its subpath imports, [("#name", target)]
        self.builds: dict[str, str] = {}  # a folder a tsconfig's build writes: the folder of the sources it builds

    def reads(self, record):
        return extractor_name(record) in ("package.json", "tsconfig")

    def learn(self, record, facts):
        directory = posixpath.dirname(record.path)
        if extractor_name(record) == "package.json":
            self.scopes[directory] = facts.get("subpath_imports", [])
        if "package" in facts:
            name, entries, subpaths = facts["package"]
            self.packages.setdefault(name, (directory, entries, subpaths))
            self.entries[directory] = entries
        if facts.get("aliases"):  # a folder's configs (tsconfig.app.json, tsconfig.json) together, the first's first
            base = posixpath.normpath(posixpath.join(directory, facts.get("base_url") or "."))
            aliases = self.configs.setdefault(directory, [])
            known = {alias for alias, _targets in aliases}
            aliases.extend(
                (alias, [posixpath.normpath(posixpath.join(base, target)) for target in targets])
                for alias, targets in facts["aliases"] if alias not in known
            )
        for output, sources in facts.get("outputs", ()):
            output, sources = (_folder(directory, folder) for folder in (output, sources))
            if output != sources:
                self.builds.setdefault(output, sources)

    def learnt(self):
        return [sorted(self.paths), sorted(self.packages.items()), sorted(self.configs.items()), sorted(self.assets),
                sorted(self.entries.items()), sorted(self.scopes.items()), sorted(self.builds.items())]

    def emit(self, record, facts, graph):
        if not is_script(record):
            return
        module_id = f"mod:js:{record.path}"
        # The language of the suffix, which is also the extractor's (.js, .jsx: javascript; .ts, .tsx: typescript).
        graph.node(module_id, "module", {"language": record.language, "name": record.path}, whole_file(record))
        declarations = record.path.endswith(DECLARATION_SUFFIXES)
        for spec, _how, line, *how in facts.get("imports", ()):
            if spec:
                attrs = {kind: True for kind in how[0]} if how and how[0] else None
                types = declarations or bool(attrs and attrs.get("type_only"))
                graph.edge(module_id, "imports", self._resolve(graph, record.path, spec, types), attrs, evidence(record, line))
        for name, declares, first, last in facts.get("exports", ()):
            symbol = graph.node(f"sym:js:{record.path}#{name}", "export", {"name": name, "declares": declares},
                                evidence(record, first, last))
            graph.edge(module_id, "exports", symbol)
        service_calls(graph, module_id, record, facts)

    def _resolve(self, graph, path: str, spec: str, types: bool = False) -> str:
        spec = spec.partition("?")[0] or spec  # "./theme.css?raw": the file, whatever the bundler makes of it
        if spec.startswith((".", "/")):
            base = posixpath.normpath(posixpath.join(posixpath.dirname(path), spec)) if not spec.startswith("/") else spec.lstrip("/")
            return self._file(graph, [base])
        aliased = None if "://" in spec or spec.startswith("npm:") else self._aliased(path, spec)  # a URL is no path
        # TypeScript maps every other bare specifier through "paths" first, "#x" too.
        if aliased is None:
            return self._bare(graph, path, spec, types)
        found = self._existing(aliased)
        if found is not None:
            return found
        # An alias into an installed package (panel's "@bokehjs/*": ["node_modules/@bokeh/bokehjs/build/js/lib/*"])
        # imports that package.
        installed = next((target.rpartition("node_modules/")[2] for target in aliased if _in_node_modules(target)), None)
        if installed:
            return self._bare(graph, path, installed, types)
        # When no file the alias names exists, TypeScript goes on as if there were none ("*": ["./*"] covers
        # "react"); then only what the repository knows it depends on is a package, else the alias's file is missing.
        return self._bare(graph, path, spec, types, known=True) or self._missing(graph, aliased[0])

    def _bare(self, graph, path: str, spec: str, types: bool, *, known: bool = False) -> str | None:
        """Return what a bare specifier (no ``paths`` alias applied) opens; given ``known``, None for a package
        that is neither declared, locked, nor the workspace's, and for a module of the repository that is missing.

        Where only types are imported (``types``: a type-only import, or any import of a declaration file), a
        package the repository does not know is the ``@types`` one it declares or locks, as TypeScript finds it:
        ``estree`` is ``@types/estree``, ``@babel/core`` is ``@types/babel__core``."""
        if spec.startswith("#"):
            return None if known else self._subpath_import(graph, path, spec)
        if spec.startswith(("npm:", "http")) and (on_npm := NPM_URL.match(spec)):
            spec = on_npm[1]
        opened = self._existing if known else lambda stems: self._file(graph, stems)
        bare = spec[5:] if spec.startswith("node:") else spec
        head = bare.split("/", 1)[0]
        if head == SVELTEKIT_LIB or head in SVELTEKIT_MODULES:
            kit = _nearest(path, self.kits)
            if kit is not None and head == SVELTEKIT_LIB:
                return opened([posixpath.join(kit, "src/lib", bare[len(head):].lstrip("/")).rstrip("/")])
            if kit is not None:
                self.dependencies.imported.add("dep:npm:@sveltejs/kit")
                return "dep:npm:@sveltejs/kit"
        if spec.startswith("node:") or head in NODE_BUILTINS:
            return graph.node(f"std:node:{head}", "stdlib", {"language": "javascript", "name": head})
        name = "/".join(bare.split("/", 2)[:2]) if bare.startswith("@") else head
        if name in self.packages:
            folder, entries, subpaths = self.packages[name]
            inside = bare[len(name):].lstrip("/")
            targets = (mapped(subpaths, "./" + inside) if inside else entries) or [inside or "index"]
            return opened([posixpath.normpath(posixpath.join(folder, target)) for target in targets])
        dependency = f"dep:npm:{name}"
        typings = f"dep:npm:@types/{name.lstrip('@').replace('/', '__')}"
        if types and not self.dependencies.known(dependency) and self.dependencies.known(typings):
            dependency = typings
        if known and not self.dependencies.known(dependency):
            return None
        if not NPM_NAME.fullmatch(name):  # a template's placeholder (require("{{name}}")) names no package
            return self._file(graph, [spec])
        self.dependencies.imported.add(dependency)
        return dependency

    def _file(self, graph, stems: list[str]) -> str:
        """Return the module of the first file a stem names, else a missing module (see ``_existing``)."""
        return self._existing(stems) or self._missing(graph, stems[0] if stems else "")

    def _existing(self, stems: list[str]) -> str | None:
        """Return the module of the first file a stem names (as Node and TypeScript try suffixes), else the one it
        is built from, else the asset file it names; None when there is none."""
        for base in chain(stems, (source for stem in stems if (source := self._built_from(stem)))):  # sources lazily
            candidates = [base]
            if base.endswith((".js", ".jsx", ".mjs", ".cjs")):
                candidates.append(base.rsplit(".", 1)[0])  # TypeScript's ESM style: import "./a.js" means a.ts
            # require("../"): the folder's package.json names the file it opens
            candidates.extend(posixpath.normpath(posixpath.join(base, entry)) for entry in self.entries.get(base, ()))
            for stem in candidates:
                for candidate in [stem] + [stem + suffix for suffix in JS_SUFFIXES] + [f"{stem}/index{suffix}" for suffix in JS_SUFFIXES]:
                    if candidate in self.paths:
                        return f"mod:js:{candidate}"
        for base in stems:
            if base in self.assets:
                return f"file:{base}"
        return None

    @staticmethod
    def _missing(graph, base: str) -> str:
        return graph.node(f"mod:js:{base}", "module", {"language": "javascript", "name": base, "missing": True})

    def _built_from(self, path: str) -> str | None:
        """Return the stem of the source the build writes ``path`` from (``lib/index.js``: ``src/index``), when
        ``path`` lies in a folder a build writes (the nearest above it); else None."""
        folder = _nearest(path, self.builds)
        if folder is None:
            return None
        inside = path[len(folder):].lstrip("/")
        suffix = next((suffix for suffix in BUILT_SUFFIXES if inside.endswith(suffix)), "")
        return posixpath.join(self.builds[folder], inside[:len(inside) - len(suffix)])

    def _subpath_import(self, graph, path: str, spec: str) -> str:
        """Return what the nearest ``package.json``'s ``imports`` map ``spec`` (``#config``) to: a file of its
        package, or the package a target names; a missing module at ``spec`` in that folder when none does."""
        scope = _nearest(path, self.scopes) or ""
        targets = mapped(self.scopes.get(scope, ()), spec) or []
        files = [posixpath.normpath(posixpath.join(scope, target)) for target in targets if target.startswith("./")]
        if files:
            return self._file(graph, files)
        package = next((target for target in targets if not target.startswith(("#", ".", "/"))), None)
        if package is not None:
            return self._resolve(graph, path, package)  # "#dep": "dep-node-native": that package
        return self._missing(graph, posixpath.join(scope, spec))

    def _aliased(self, path: str, spec: str) -> list[str] | None:
        """Return the stems the ``paths`` alias of the nearest tsconfig that covers ``spec`` maps it to (the alias
        itself, else the one with the longest prefix, whatever their order), or None if none covers it."""
        for directory in folders_above(path):
            found = best_match(self.configs.get(directory, ()), spec)
            if found is not None:
                targets, matched = found
                return targets if matched is None else [target.replace("*", matched, 1) for target in targets]
        return None


def _folder(directory: str, relative: str) -> str:
    """Return the folder ``relative`` names from ``directory``, from the repository's root ("" for the root)."""
    folder = posixpath.normpath(posixpath.join(directory, relative))
    return "" if folder == "." else folder


def _in_node_modules(path: str) -> bool:
    return path.startswith("node_modules/") or "/node_modules/" in path


def _nearest(path: str, folders) -> str | None:
    """Return the nearest folder at or above ``path``'s that is one of ``folders``; None when none is."""
    return next((folder for folder in folders_above(path) if folder in folders), None)
