"""JavaScript and TypeScript facts on monorepo shapes: workspace packages, tsconfig path aliases, import kinds,
variance annotations and fetch methods."""

from tests.pipeline_support import analyse, write_tree


def test_workspace_packages_and_path_aliases_resolve_inside_the_repository(tmp_path):
    root = write_tree(tmp_path / "mono", {
        "package.json": '{"name": "mono", "private": true, "workspaces": ["packages/*"], "dependencies": {"react": "^18"}}\n',
        "packages/ui/package.json": '{"name": "@acme/ui", "exports": {".": {"import": "./src/index.ts"}}}\n',
        "packages/ui/src/index.ts": "export const Button = 1;\n",
        "packages/ui/src/theme.ts": "export const theme = 1;\n",
        "apps/web/tsconfig.json": (
            "{\n  // the app's aliases\n  \"compilerOptions\": {\n    \"baseUrl\": \".\",\n"
            "    \"paths\": {\"@/*\": [\"src/*\"], \"~config\": [\"config/index.ts\"],},\n  },\n}\n"
        ),
        "apps/web/src/lib/api.ts": "export const api = 1;\n",
        "apps/web/config/index.ts": "export default {};\n",
        "apps/web/src/page.tsx": (
            'import { Button } from "@acme/ui";\n'
            'import { theme } from "@acme/ui/src/theme";\n'
            'import { api } from "@/lib/api";\n'
            'import config from "~config";\n'
            'import { gone } from "@/missing";\n'
            'import React from "react";\n'
        ),
    })
    result = analyse(root)
    assert result.targets("mod:js:apps/web/src/page.tsx", "imports") == [
        "dep:npm:react", "mod:js:apps/web/config/index.ts", "mod:js:apps/web/src/lib/api.ts", "mod:js:apps/web/src/missing",
        "mod:js:packages/ui/src/index.ts", "mod:js:packages/ui/src/theme.ts",
    ]
    assert result.nodes["mod:js:apps/web/src/missing"]["attrs"]["missing"] is True
    assert sorted(result.of_kind("dependency")) == ["dep:npm:react"]  # no alias or workspace package invented


def test_type_only_and_dynamic_imports_say_so(tmp_path):
    root = write_tree(tmp_path / "r", {
        "a.ts": "export type A = 1;\n", "b.ts": "export const b = 1;\n", "lazy.ts": "export default 1;\n",
        "main.ts": 'import type { A } from "./a";\nimport { b } from "./b";\nconst lazy = await import("./lazy");\n',
    })
    result = analyse(root)
    attrs = {edge["dst"]: edge.get("attrs", {}) for edge in result.edges_from("mod:js:main.ts", "imports")}
    assert attrs == {"mod:js:a.ts": {"type_only": True}, "mod:js:b.ts": {}, "mod:js:lazy.ts": {"dynamic": True}}


def test_variance_annotations_parse_cleanly_and_real_errors_still_show(tmp_path):
    root = write_tree(tmp_path / "r", {
        "variance.ts": "export interface Producer<out T> { get(): T }\nexport type Fn<in out T> = (x: T) => T;\n",
        "broken.ts": "export const x = (;\n",
    })
    result = analyse(root)
    assert "diag:parse-error:variance.ts" not in result.nodes
    assert "diag:parse-error:broken.ts" in result.nodes
    assert result.targets("mod:js:variance.ts", "exports") == ["sym:js:variance.ts#Fn", "sym:js:variance.ts#Producer"]


def test_keyof_a_readonly_array_parses_cleanly(tmp_path):
    # TypeScript's own lib.es2015.symbol.wellknown.d.ts; tree-sitter-typescript 0.23 fails on it as written.
    root = write_tree(tmp_path / "r", {
        "wellknown.d.ts": (
            'import { Base } from "./base";\n'
            "export interface ReadonlyArray<T> {\n"
            "    readonly [Symbol.unscopables]: {\n"
            "        [K in keyof readonly any[]]?: boolean;\n"
            "    };\n"
            "}\n"
            "export type Keys = keyof  readonly string[];\n"
        ),
        "base.ts": "export const readonly = 1;\nexport type Broken = keyof readonly ;\n",  # still an error
    })
    result = analyse(root)
    assert "diag:parse-error:wellknown.d.ts" not in result.nodes
    assert result.targets("mod:js:wellknown.d.ts", "imports") == ["mod:js:base.ts"]
    assert result.targets("mod:js:wellknown.d.ts", "exports") == [
        "sym:js:wellknown.d.ts#Keys", "sym:js:wellknown.d.ts#ReadonlyArray"]
    assert result.nodes["sym:js:wellknown.d.ts#Keys"]["evidence"][0]["lines"] == [7, 7]
    assert "diag:parse-error:base.ts" in result.nodes  # a real error is still one
    assert "sym:js:base.ts#readonly" in result.targets("mod:js:base.ts", "exports")  # a name, not blanked


def test_fetch_records_its_method_option(tmp_path):
    root = write_tree(tmp_path / "r", {
        "client.js": (
            'fetch("https://api.example.com/items", { method: "POST", body: "{}" });\n'
            'fetch("https://cdn.example.com/a.js");\n'
            'fetch("https://dyn.example.com/x", { method: verb });\n'
        ),
    })
    result = analyse(root)
    methods = {edge["dst"]: edge["attrs"]["method"] for edge in result.edges if edge["kind"] == "calls"}
    assert methods == {"svc:api.example.com": "POST", "svc:cdn.example.com": "GET", "svc:dyn.example.com": "*"}
