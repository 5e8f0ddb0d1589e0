"""JavaScript and TypeScript: a module node per file, its imports matched to files or packages, its exports and calls."""

import posixpath

from .family import Family, evidence, extractor_name, service_calls, whole_file

NODE_BUILTINS = frozenset(
    "assert async_hooks buffer child_process cluster console constants crypto dgram diagnostics_channel dns domain "
    "events fs http http2 https inspector module net os path perf_hooks process punycode querystring readline repl "
    "stream string_decoder sys timers tls trace_events tty url util v8 vm wasi worker_threads zlib test".split()
)
JS_SUFFIXES = (".js", ".mjs", ".cjs", ".jsx", ".ts", ".tsx", ".mts", ".cts", ".d.ts")
SCRIPT_EXTRACTORS = frozenset(("javascript", "typescript", "tsx"))


def is_script(record) -> bool:
    return extractor_name(record) in SCRIPT_EXTRACTORS


class JavaScript(Family):
    def __init__(self, linker):
        super().__init__(linker)
        self.paths = {record.path for record in linker.records if is_script(record)}

    def emit(self, record, facts, graph):
        if not is_script(record):
            return
        module_id = f"mod:js:{record.path}"
        language = "javascript" if extractor_name(record) == "javascript" else "typescript"
        graph.node(module_id, "module", {"language": language, "name": record.path}, whole_file(record))
        for spec, _how, line in facts.get("imports", ()):
            if spec:
                graph.edge(module_id, "imports", self._resolve(graph, record.path, spec), None, evidence(record, line))
        for name, declares, first, last in facts.get("exports", ()):
            symbol = graph.node(f"sym:js:{record.path}#{name}", "export", {"name": name, "declares": declares},
                                evidence(record, first, last))
            graph.edge(module_id, "exports", symbol)
        service_calls(graph, module_id, record, facts)

    def _resolve(self, graph, path: str, spec: str) -> str:
        if spec.startswith((".", "/")):
            base = posixpath.normpath(posixpath.join(posixpath.dirname(path), spec)) if not spec.startswith("/") else spec.lstrip("/")
            stems = [base]
            if base.endswith((".js", ".jsx", ".mjs", ".cjs")):
                stems.append(base.rsplit(".", 1)[0])  # TypeScript's ESM style: import "./a.js" means a.ts
            for stem in stems:
                for candidate in [stem] + [stem + suffix for suffix in JS_SUFFIXES] + [f"{stem}/index{suffix}" for suffix in JS_SUFFIXES]:
                    if candidate in self.paths:
                        return f"mod:js:{candidate}"
            return graph.node(f"mod:js:{base}", "module", {"language": "javascript", "name": base, "missing": True})
        bare = spec[5:] if spec.startswith("node:") else spec
        head = bare.split("/", 1)[0]
        if spec.startswith("node:") or head in NODE_BUILTINS:
            return graph.node(f"std:node:{head}", "stdlib", {"language": "javascript", "name": head})
        name = "/".join(bare.split("/", 2)[:2]) if bare.startswith("@") else head
        dependency = f"dep:npm:{name}"
        self.linker.dependencies.imported.add(dependency)
        return dependency
