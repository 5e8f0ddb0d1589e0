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


def test_the_path_alias_with_the_longest_prefix_maps_an_import_whatever_its_order(tmp_path):
    # TypeScript takes an exact alias first, then the matching pattern with the longest part before its "*".
    root = write_tree(tmp_path / "app", {
        "tsconfig.json": (
            '{"compilerOptions": {"paths": {"@app/*": ["src/*"], "@app/ui/*": ["packages/ui/src/*"],'
            ' "*": ["types/*"], "@app/ui": ["packages/ui/index.ts"]}}}\n'
        ),
        "src/api.ts": "export const api = 1;\n",
        "packages/ui/src/button.ts": "export const Button = 1;\n",
        "packages/ui/index.ts": "export const ui = 1;\n",
        "types/globals.ts": "export type G = 1;\n",
        "main.ts": (
            'import { api } from "@app/api";\n'
            'import { Button } from "@app/ui/button";\n'
            'import { ui } from "@app/ui";\n'
            'import type { G } from "globals";\n'
        ),
    })
    result = analyse(root)
    assert result.targets("mod:js:main.ts", "imports") == [
        "mod:js:packages/ui/index.ts", "mod:js:packages/ui/src/button.ts", "mod:js:src/api.ts", "mod:js:types/globals.ts",
    ]


def test_a_workspace_packages_subpaths_go_where_its_exports_map_them(tmp_path):
    # The shape of a Turborepo workspace: the ui package exports its components by subpath, none at ".".
    root = write_tree(tmp_path / "turbo", {
        "packages/ui/package.json": (
            '{"name": "@repo/ui", "exports": {"./button": "./src/button.tsx", "./card": {"types": "./src/card.tsx",'
            ' "default": "./dist/card.js"}, "./icons/*": "./src/icons/*.tsx", "./icons/brand/*": ["./src/brand/*.tsx"],'
            ' "./internal": null, "./env": {"node": "./src/env-node.ts", "browser": "./src/env-web.ts"}}}\n'
        ),
        "packages/ui/src/env-node.ts": "export const env = 1;\n",
        "packages/ui/src/env-web.ts": "export const env = 2;\n",
        "packages/ui/src/button.tsx": "export const Button = 1;\n",
        "packages/ui/src/card.tsx": "export const Card = 1;\n",
        "packages/ui/src/icons/arrow.tsx": "export const Arrow = 1;\n",
        "packages/ui/src/brand/logo.tsx": "export const Logo = 1;\n",
        "packages/ui/theme.ts": "export const theme = 1;\n",
        "apps/web/app/page.tsx": (
            'import { Button } from "@repo/ui/button";\n'
            'import { Card } from "@repo/ui/card";\n'
            'import { Arrow } from "@repo/ui/icons/arrow";\n'
            'import { Logo } from "@repo/ui/icons/brand/logo";\n'
            'import { theme } from "@repo/ui/theme";\n'  # no key covers it: the package's folder, as before
            'import { env } from "@repo/ui/env";\n'  # conditions with no preferred one: the first, as Node reads them
        ),
    })
    result = analyse(root)
    assert result.targets("mod:js:apps/web/app/page.tsx", "imports") == [
        "mod:js:packages/ui/src/brand/logo.tsx", "mod:js:packages/ui/src/button.tsx", "mod:js:packages/ui/src/card.tsx",
        "mod:js:packages/ui/src/env-node.ts", "mod:js:packages/ui/src/icons/arrow.tsx", "mod:js:packages/ui/theme.ts",
    ]
    assert result.of_kind("dependency") == {}


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


def test_typescript_that_the_grammar_does_not_know_parses_with_its_facts(tmp_path):
    # Shapes from published packages (zod, effect, rxjs, typeorm, bokeh) that tsc accepts and tree-sitter-typescript
    # 0.23 did not: each gave a parse-error diagnostic, and some lost their exports.
    root = write_tree(tmp_path / "r", {
        "errors.ts": "export type E = 1;\n", "types.ts": "export type T = 1;\n", "o.ts": "export type O<A> = A;\n",
        "kinds.ts": "export namespace Kinds { export type Or<T> = T; export type R = 1 }\n",
        "index.d.ts": (
            'export type * from "./errors";\n'  # TypeScript 5.0
            'export type * as types from "./types";\n'
            "export interface $ZodCheck<in T = never> {}\n"  # zod: variance with a default
            "export interface Cache<in out Key, in out A, out R = never> extends Base {}\n"  # effect
            "export declare const filter: <Input, const Tag extends string>(tag: Tag) => Input;\n"
            "export interface Shape<\n  /** @ts-ignore Cast variance */\n  out S extends object = {},\n> {}\n"
            'export declare function schedule<T>(input: PromiseLike<T>): import("./o").O<T>;\n'  # rxjs' declaration emit
            'export declare const Like: import("./kinds").Kinds.Or<[string, import("./o").O<null>]>;\n'  # bokeh's
            'export declare class Tool {\n  get overlays(): import("./kinds").Kinds.R[];\n}\n'
            'declare module "node:buffer" {\n    global {\n        interface BufferConstructor {}\n    }\n}\n'  # @types/node's
            "export declare namespace Types {}\n"
        ),
        "dual.ts": (  # effect's overloads: each generic call signature on a line of its own, no ";" between
            "export const map: {\n"
            "  <A, B>(f: (a: A) => B): (self: Array<A>) => Array<B>\n"
            "  /** data first */\n"
            "  <A, B>(self: Array<A>, f: (a: A) => B): Array<B>\n"
            "} = dual\n"
            "export const curried =\n  <E>(e: E) =>\n  <A>(a: A): [E, A] => [e, a]\n"  # the arrow's line break is no ";"
        ),
        "mock.test.tsx": (  # airflow's Vitest mocks
            'vi.mock("./o", async (importOriginal) => {\n'
            '  const actual = await importOriginal<typeof import("./o")>();\n'
            "  return { ...actual, Button: () => <b>x</b> };\n});\n"
        ),
        "tags.d.ts": (  # MUI's Autocomplete.d.ts
            "export type GetTagProps = ({\n  index\n}: {\n  index: number;\n}) => {\n  key: number;\n};\n"
            "export declare function useTags(): void;\n"
        ),
        "broken.ts": "export interface Bad<in T = > {}\n",  # still an error
    })
    result = analyse(root)
    assert sorted(node_id for node_id in result.of_kind("diagnostic")) == ["diag:parse-error:broken.ts"]
    attrs = {edge["dst"]: edge.get("attrs", {}) for edge in result.edges_from("mod:js:index.d.ts", "imports")}
    assert attrs == {
        "mod:js:errors.ts": {"type_only": True}, "mod:js:types.ts": {"type_only": True}, "mod:js:o.ts": {"type_only": True},
        "mod:js:kinds.ts": {"type_only": True},
    }
    assert result.targets("mod:js:index.d.ts", "exports") == [
        "sym:js:index.d.ts#$ZodCheck", "sym:js:index.d.ts#Cache", "sym:js:index.d.ts#Like", "sym:js:index.d.ts#Shape",
        "sym:js:index.d.ts#Tool", "sym:js:index.d.ts#Types",
        "sym:js:index.d.ts#filter", "sym:js:index.d.ts#schedule", "sym:js:index.d.ts#types",
    ]
    assert result.nodes["sym:js:index.d.ts#schedule"]["attrs"] == {"declares": "function", "name": "schedule"}
    assert result.targets("mod:js:dual.ts", "exports") == ["sym:js:dual.ts#curried", "sym:js:dual.ts#map"]
    assert result.targets("mod:js:tags.d.ts", "exports") == ["sym:js:tags.d.ts#GetTagProps", "sym:js:tags.d.ts#useTags"]
    assert [(edge["dst"], edge["attrs"]) for edge in result.edges_from("mod:js:mock.test.tsx", "imports")] == [
        ("mod:js:o.ts", {"type_only": True}),
    ]


def test_a_reserved_word_may_be_an_exported_name(tmp_path):
    # zod's v3/types.js: export { nullType as null, ... }; tree-sitter-javascript 0.25 took the name for an error.
    root = write_tree(tmp_path / "r", {"types.js": "const nullType = 1, c = 2;\nexport { nullType as null, c as catch, c as any };\n"})
    result = analyse(root)
    assert not result.of_kind("diagnostic")
    assert result.targets("mod:js:types.js", "exports") == ["sym:js:types.js#any", "sym:js:types.js#catch", "sym:js:types.js#null"]


def test_a_reserved_word_may_be_an_imported_name(tmp_path):
    # marimo's Vite chunks: import{$t as e,in as g,do as I}from"./dist-qhAY4L2r.js"
    root = write_tree(tmp_path / "r", {
        "chunk.js": "const a = 1;\nexport { a as in, a as do, a as if };\n",
        "app.js": 'import{in as g,do as I, if as f}from"./chunk.js";export{in as again}from"./chunk.js";\nconst t = g in {};\n',
    })
    result = analyse(root)
    assert not result.of_kind("diagnostic")
    assert result.targets("mod:js:app.js", "imports") == ["mod:js:chunk.js"]
    assert result.targets("mod:js:app.js", "exports") == ["sym:js:app.js#again"]


def test_an_import_of_an_asset_or_a_package_folder_goes_to_that_file(tmp_path):
    # iconv-lite requires its JSON tables, qs's tests require("../"), and a Vue or React app imports its styles.
    root = write_tree(tmp_path / "r", {
        "lib/package.json": '{"name": "qs", "main": "lib/index.js"}\n',
        "lib/lib/index.js": "module.exports = {};\n",
        "lib/test/parse.js": "var qs = require('../');\nvar table = require('../tables/cp936.json');\n",
        "lib/tables/cp936.json": "[]\n",
        "app/main.ts": 'import "./App.css";\nimport logo from "./logo.svg";\nimport Button from "./Button.vue";\nimport gone from "./gone.css";\n',
        "app/App.css": "body {}\n", "app/logo.svg": "<svg/>\n", "app/Button.vue": "<template></template>\n",
    })
    result = analyse(root)
    assert result.targets("mod:js:lib/test/parse.js", "imports") == ["file:lib/tables/cp936.json", "mod:js:lib/lib/index.js"]
    assert result.targets("mod:js:app/main.ts", "imports") == [
        "file:app/App.css", "file:app/Button.vue", "file:app/logo.svg", "mod:js:app/gone.css"]
    assert result.nodes["mod:js:app/gone.css"]["attrs"]["missing"] is True


def test_import_and_export_assignments_and_a_namespace_reexport(tmp_path):
    # TypeScript's CommonJS form, as older sources and many .d.ts files write it, and ES2020's named re-export.
    root = write_tree(tmp_path / "r", {
        "src/legacy.ts": 'import fs = require("fs");\nimport express = require("express");\nimport type Cfg = require("./config");\n',
        "src/config.ts": "declare const config: { port: number };\nexport = config;\n",
        "src/index.js": 'export * as legacy from "./legacy";\nexport * as "wire format" from "./config";\n',
    })
    result = analyse(root)
    assert result.targets("mod:js:src/legacy.ts", "imports") == ["dep:npm:express", "mod:js:src/config.ts", "std:node:fs"]
    cfg = next(edge for edge in result.edges_from("mod:js:src/legacy.ts", "imports") if edge["dst"] == "mod:js:src/config.ts")
    assert cfg["attrs"] == {"type_only": True}
    assert result.targets("mod:js:src/index.js", "exports") == ["sym:js:src/index.js#legacy", "sym:js:src/index.js#wire format"]
    assert result.targets("mod:js:src/config.ts", "exports") == ["sym:js:src/config.ts#default"]  # export =, typed CommonJS


def test_destructuring_exports_and_subscript_commonjs_exports_export_each_name(tmp_path):
    root = write_tree(tmp_path / "r", {
        "src/env.ts": (
            "export const { API_URL, TIMEOUT: timeout, RETRIES = 3, nested: { DEPTH }, ...others } = process.env;\n"
            "export let [first, , second = 2, ...rest] = pair;\n"
        ),
        "lib/index.js": 'exports["default"] = main;\nmodule.exports[\'helper\'] = helper;\nexports[key] = computed;\n',
    })
    result = analyse(root)
    assert result.targets("mod:js:src/env.ts", "exports") == [
        f"sym:js:src/env.ts#{name}" for name in sorted(["API_URL", "timeout", "RETRIES", "DEPTH", "others", "first", "second", "rest"])
    ]
    assert result.targets("mod:js:lib/index.js", "exports") == ["sym:js:lib/index.js#default", "sym:js:lib/index.js#helper"]


def test_subpath_imports_go_where_the_nearest_package_json_maps_them(tmp_path):
    # Node's "imports" field, as vitest, chalk and undici use it: "#name" is private to the package.
    root = write_tree(tmp_path / "mono", {
        "package.json": '{"name": "mono", "private": true, "imports": {"#root": "./tools/root.js"}}\n',
        "packages/core/package.json": (
            '{"name": "@acme/core", "imports": {"#config": "./src/config.ts", "#utils/*": "./src/utils/*.ts",'
            ' "#platform": {"node": "./src/node.ts", "default": "./src/browser.ts"}, "#fetch": "undici"}}\n'
        ),
        "packages/core/src/config.ts": "export const config = 1;\n",
        "packages/core/src/utils/strings.ts": "export const pad = 1;\n",
        "packages/core/src/browser.ts": "export const platform = 1;\n",
        "packages/core/src/node.ts": "export const platform = 2;\n",
        "packages/core/src/index.ts": (
            'import { config } from "#config";\nimport { pad } from "#utils/strings";\n'
            'import { platform } from "#platform";\nimport { fetch } from "#fetch";\nimport { gone } from "#gone";\n'
        ),
        "tools/root.js": "module.exports = 1;\n",
        "tools/run.js": 'const root = require("#root");\n',
    })
    result = analyse(root)
    assert result.targets("mod:js:packages/core/src/index.ts", "imports") == [
        "dep:npm:undici", "mod:js:packages/core/#gone", "mod:js:packages/core/src/browser.ts",
        "mod:js:packages/core/src/config.ts", "mod:js:packages/core/src/utils/strings.ts",
    ]
    assert result.nodes["mod:js:packages/core/#gone"]["attrs"]["missing"] is True
    assert result.targets("mod:js:tools/run.js", "imports") == ["mod:js:tools/root.js"]
    assert sorted(result.of_kind("dependency")) == ["dep:npm:undici"]  # no "#config" dependency invented


def test_an_import_of_a_cjs_or_mjs_file_is_its_declaration_file_where_only_that_is_there(tmp_path):
    # The declaration files of a dual package (as tanstack's query-core ships them) import their siblings by
    # the extension of the JavaScript they describe.
    root = write_tree(tmp_path / "r", {
        "dist-types/legacy/hydration-Hw0j.d.cts": "export declare function hydrate(): void;\n",
        "dist-types/legacy/utils.d.cts": "import { hydrate } from './hydration-Hw0j.cjs';\n",
        "dist-types/modern/types.d.mts": "export type T = 1;\n",
        "dist-types/modern/index.d.mts": "export * from './types.mjs';\n",
    })
    result = analyse(root)
    assert result.targets("mod:js:dist-types/legacy/utils.d.cts", "imports") == ["mod:js:dist-types/legacy/hydration-Hw0j.d.cts"]
    assert result.targets("mod:js:dist-types/modern/index.d.mts", "imports") == ["mod:js:dist-types/modern/types.d.mts"]


def test_an_import_of_what_the_build_writes_goes_to_the_source_it_is_built_from(tmp_path):
    # jupyterlab's galata: "main": "lib/index.js", and lib/ is written by tsc from src/ (outDir, rootDir).
    root = write_tree(tmp_path / "mono", {
        "galata/package.json": '{"name": "@acme/galata", "main": "lib/index.js", "types": "lib/index.d.ts"}\n',
        "galata/tsconfig.json": '{"extends": "../tsconfigbase", "compilerOptions": {"outDir": "lib", "rootDir": "src"}}\n',
        "galata/src/index.ts": "export const test = 1;\n",
        "galata/src/playwright-config.ts": "export default {};\n",
        "galata/test/util.spec.ts": 'import { test } from "../lib/index.js";\n',
        "kit/package.json": '{"name": "kit", "main": "./dist/main.js"}\n',
        "kit/tsconfig.build.json": '{"compilerOptions": {"declarationDir": "types", "outDir": "./dist", "rootDir": "./lib"}}\n',
        "kit/lib/main.mts": "export const kit = 1;\n",
        "kit/lib/extra.ts": "export const extra = 1;\n",
        # gradio's client: no rootDir, so TypeScript takes the folder its include names
        "client/package.json": '{"name": "@gradio/client", "exports": {".": {"types": "./dist/index.d.ts"}}}\n',
        "client/tsconfig.json": '{"include": ["src/**/*"], "exclude": ["src/test"], "compilerOptions": {"outDir": "dist"}}\n',
        "client/src/index.ts": "export const client = 1;\n",
        "plain/package.json": '{"name": "plain", "main": "lib/index.js"}\n',  # no tsconfig says what builds lib/
        "plain/src/index.ts": "export const plain = 1;\n",
        "app/main.ts": (
            'import { test } from "@acme/galata";\nimport config from "@acme/galata/lib/playwright-config";\n'
            'import { kit } from "kit";\nimport type { extra } from "kit/types/extra";\nimport { plain } from "plain";\n'
            'import { client } from "@gradio/client";\n'
        ),
    })
    result = analyse(root)
    assert result.targets("mod:js:app/main.ts", "imports") == [
        "mod:js:client/src/index.ts", "mod:js:galata/src/index.ts", "mod:js:galata/src/playwright-config.ts", "mod:js:kit/lib/extra.ts",
        "mod:js:kit/lib/main.mts", "mod:js:plain/lib/index.js",
    ]
    assert result.nodes["mod:js:plain/lib/index.js"]["attrs"]["missing"] is True
    assert result.targets("mod:js:galata/test/util.spec.ts", "imports") == ["mod:js:galata/src/index.ts"]


def test_an_import_that_names_no_package_is_never_a_dependency(tmp_path):
    # jupyterlab's staging/index.js is a Handlebars template: require('{{@key}}{{#if this}}/{{this}}{{/if}}').
    root = write_tree(tmp_path / "app", {
        "templates/index.js": "const ext = require('{{@key}}/{{this}}');\nconst left = require('left-pad');\n",
    })
    result = analyse(root)
    assert result.targets("mod:js:templates/index.js", "imports") == ["dep:npm:left-pad", "mod:js:{{@key}}/{{this}}"]
    assert sorted(result.of_kind("dependency")) == ["dep:npm:left-pad"]
    assert result.nodes["mod:js:{{@key}}/{{this}}"]["attrs"]["missing"] is True


def test_sveltekit_modules_and_queries_resolve_as_the_kit_and_vite_load_them(tmp_path):
    # gradio's js/app: a SvelteKit project imports $lib/... (its src/lib), $app/... and $env/... (the kit's own),
    # and Vite's "?raw" asks for a file's text.
    root = write_tree(tmp_path / "mono", {
        "js/app/package.json": '{"name": "app", "devDependencies": {"@sveltejs/kit": "^2"}}\n',
        "js/app/svelte.config.js": 'import adapter from "@sveltejs/adapter-node";\nexport default { kit: { adapter: adapter() } };\n',
        "js/app/src/lib/utils.ts": "export const utils = 1;\n",
        "js/app/src/lib/index.ts": "export const lib = 1;\n",
        "js/app/src/lib/assets/theme.css": "body {}\n",
        "js/app/src/routes/+page.ts": (
            'import { utils } from "$lib/utils";\nimport { lib } from "$lib";\nimport theme from "$lib/assets/theme.css?raw";\n'
            'import { browser } from "$app/environment";\nimport { env } from "$env/dynamic/private";\n'
            'import Worker from "./worker.ts?worker&inline";\n'
        ),
        "js/app/src/routes/worker.ts": "export {};\n",
        "tools/build.ts": 'import { utils } from "$lib/utils";\n',  # no SvelteKit project above it
    })
    result = analyse(root)
    assert result.targets("mod:js:js/app/src/routes/+page.ts", "imports") == [
        "dep:npm:@sveltejs/kit", "file:js/app/src/lib/assets/theme.css",
        "mod:js:js/app/src/lib/index.ts", "mod:js:js/app/src/lib/utils.ts", "mod:js:js/app/src/routes/worker.ts",
    ]
    assert result.targets("mod:js:tools/build.ts", "imports") == ["mod:js:$lib/utils"]
    assert result.nodes["mod:js:$lib/utils"]["attrs"]["missing"] is True
    assert sorted(result.of_kind("dependency")) == ["dep:npm:@sveltejs/adapter-node", "dep:npm:@sveltejs/kit"]


def test_the_aliases_of_every_tsconfig_in_a_folder_apply(tmp_path):
    # Vite's template: tsconfig.app.json holds the app's aliases, tsconfig.json refers to it and adds its own.
    root = write_tree(tmp_path / "web", {
        "tsconfig.app.json": '{"compilerOptions": {"paths": {"@/*": ["./src/*"], "~/*": ["./app/*"]}}, "include": ["src"]}\n',
        "tsconfig.json": '{"files": [], "references": [{"path": "./tsconfig.app.json"}], "compilerOptions": {"paths": {"@/*": ["./other/*"], "#ui/*": ["./ui/*"]}}}\n',
        "tsconfig.node.json": '{"include": ["vite.config.ts"]}\n',
        "src/lib/utils.ts": "export const cn = 1;\n",
        "app/store.ts": "export const store = 1;\n",
        "ui/button.ts": "export const Button = 1;\n",
        "src/main.ts": 'import { cn } from "@/lib/utils";\nimport { store } from "~/store";\nimport { Button } from "#ui/button";\n',
    })
    result = analyse(root)
    assert result.targets("mod:js:src/main.ts", "imports") == ["mod:js:app/store.ts", "mod:js:src/lib/utils.ts", "mod:js:ui/button.ts"]


def test_a_pnpm_catalog_spec_takes_its_range_from_the_workspaces_catalog(tmp_path):
    # vue's core and vitest declare "catalog:" in their packages and keep the ranges in pnpm-workspace.yaml.
    root = write_tree(tmp_path / "mono", {
        "pnpm-workspace.yaml": (
            "packages:\n  - packages/*\ncatalog:\n  react: ^18.3.1\n  '@babel/parser': ^7.27.5\n"
            "catalogs:\n  legacy:\n    react-dom: 17\n"
        ),
        "packages/app/package.json": (
            '{"name": "app", "dependencies": {"react": "catalog:", "react-dom": "catalog:legacy", "@babel/parser": "catalog:default",'
            ' "left-pad": "catalog:", "zod": "^3.23.0"}}\n'
        ),
    })
    result = analyse(root)
    attrs = {edge["dst"]: edge["attrs"] for edge in result.edges_from("file:packages/app/package.json", "declares")}
    assert attrs == {
        "dep:npm:react": {"spec": "^18.3.1", "scope": "main", "catalog": "default"},
        "dep:npm:@babel/parser": {"spec": "^7.27.5", "scope": "main", "catalog": "default"},
        "dep:npm:react-dom": {"spec": "17", "scope": "main", "catalog": "legacy"},
        "dep:npm:left-pad": {"spec": "catalog:", "scope": "main"},  # in no catalog: the spec as written
        "dep:npm:zod": {"spec": "^3.23.0", "scope": "main"},
    }
    assert "diag:parse-error:pnpm-workspace.yaml" not in result.nodes


def test_a_bun_catalog_in_the_root_package_json_gives_the_ranges_too(tmp_path):
    root = write_tree(tmp_path / "mono", {
        "package.json": (
            '{"name": "mono", "workspaces": {"packages": ["packages/*"], "catalog": {"react": "^19.0.0"},'
            ' "catalogs": {"testing": {"jest": "30.0.0"}}}}\n'
        ),
        "packages/app/package.json": '{"name": "app", "dependencies": {"react": "catalog:"}, "devDependencies": {"jest": "catalog:testing"}}\n',
    })
    result = analyse(root)
    attrs = {edge["dst"]: edge["attrs"] for edge in result.edges_from("file:packages/app/package.json", "declares")}
    assert attrs == {
        "dep:npm:react": {"spec": "^19.0.0", "scope": "main", "catalog": "default"},
        "dep:npm:jest": {"spec": "30.0.0", "scope": "dev", "catalog": "testing"},
    }


def test_using_as_a_name_parses_and_its_exports_keep_it(tmp_path):
    # drizzle's query builders: .using(using: string); "using" is the keyword only where it declares.
    root = write_tree(tmp_path / "r", {
        "indexes.d.ts": (
            'import type { Config } from "./config";\n'
            "export declare class IndexBuilder {\n    using(using: Config['using']): this;\n}\n"
            "export declare function using(using?: string, ...rest: string[]): void;\n"
        ),
        "config.ts": "export type Config = { using: string };\n",
        "run.js": (
            'const { using } = require("./using.js");\nusing(using);\nfunction apply(a, using = 1) { return a + using; }\n'
            "export { apply, using };\n"
        ),
        "using.js": "exports.using = (x) => x;\n",
        "scope.ts": "export function read() {\n  using res = open();\n  return res;\n}\n",  # the keyword: still a declaration
    })
    result = analyse(root)
    assert sorted(result.of_kind("diagnostic")) == []
    assert result.targets("mod:js:indexes.d.ts", "exports") == ["sym:js:indexes.d.ts#IndexBuilder", "sym:js:indexes.d.ts#using"]
    assert result.targets("mod:js:run.js", "exports") == ["sym:js:run.js#apply", "sym:js:run.js#using"]
    assert result.targets("mod:js:run.js", "imports") == ["mod:js:using.js"]


def test_an_alias_that_opens_no_file_leaves_the_import_to_the_packages(tmp_path):
    # Airflow's UI: "*": ["./*"] covers every bare import, and TypeScript goes on to node_modules where it opens
    # no file; "react" was a missing module of the repository.
    root = write_tree(tmp_path / "ui", {
        "package.json": '{"name": "ui", "dependencies": {"react": "^19", "@chakra-ui/react": "^3"}}\n',
        "packages/icons/package.json": '{"name": "@acme/icons", "main": "index.ts"}\n',
        "packages/icons/index.ts": "export const Arrow = 1;\n",
        "tsconfig.json": '{"compilerOptions": {"paths": {"src/*": ["./src/*"], "*": ["./*"]}}}\n',
        "src/api.ts": "export const api = 1;\n",
        "utils/dates.ts": "export const today = 1;\n",
        "src/page.tsx": (
            'import React from "react";\n'
            'import { Box } from "@chakra-ui/react";\n'
            'import { Arrow } from "@acme/icons";\n'
            'import path from "node:path";\n'
            'import { api } from "src/api";\n'
            'import { today } from "utils/dates";\n'
            'import { gone } from "src/gone";\n'
            'import { x } from "undeclared-lib";\n'
        ),
    })
    result = analyse(root)
    assert result.targets("mod:js:src/page.tsx", "imports") == [
        "dep:npm:@chakra-ui/react", "dep:npm:react", "mod:js:packages/icons/index.ts", "mod:js:src/api.ts",
        "mod:js:src/gone", "mod:js:undeclared-lib", "mod:js:utils/dates.ts", "std:node:path",
    ]
    # what the repository does not say it depends on stays the alias's missing file, never an invented dependency
    assert result.nodes["mod:js:undeclared-lib"]["attrs"]["missing"] is True
    assert sorted(result.of_kind("dependency")) == ["dep:npm:@chakra-ui/react", "dep:npm:react"]


def test_types_imported_from_an_undeclared_package_are_its_declared_types_package(tmp_path):
    # eslint's lib/types/index.d.ts imports "estree", and eslint declares @types/estree.
    root = write_tree(tmp_path / "lib", {
        "package.json": (
            '{"name": "lib", "dependencies": {"@types/estree": "^1", "@types/babel__core": "^7", "@types/react": "^19",'
            ' "react": "^19"}}\n'
        ),
        "types/index.d.ts": 'import * as ESTree from "estree";\nimport { Lodash } from "lodash";\n',
        "src/visit.ts": (
            'import type { TransformOptions } from "@babel/core";\n'
            'import type { FC } from "react";\n'
            'import { parse } from "estree";\n'  # a value import needs the package itself
        ),
    })
    result = analyse(root)
    assert result.targets("mod:js:types/index.d.ts", "imports") == ["dep:npm:@types/estree", "dep:npm:lodash"]
    assert result.targets("mod:js:src/visit.ts", "imports") == [
        "dep:npm:@types/babel__core", "dep:npm:estree", "dep:npm:react",
    ]


def test_a_package_named_by_npm_or_a_cdn_url_is_that_package(tmp_path):
    # three's examples import from jsDelivr; Deno and Bun write npm:name@version.
    root = write_tree(tmp_path / "app", {
        "package.json": '{"name": "app", "dependencies": {"three": "^0.180"}}\n',
        "tsconfig.json": '{"compilerOptions": {"paths": {"*": ["./src/*"]}}}\n',  # never maps a URL
        "main.js": (
            "import MP4Box from 'https://cdn.jsdelivr.net/npm/mp4box@2.3.0/+esm';\n"
            "import { html } from 'https://esm.sh/lit@3/html';\n"
            "import { ref } from 'https://unpkg.com/@vue/reactivity@3.5.0/dist/reactivity.esm-browser.js';\n"
            "import * as THREE from 'npm:three@0.180';\n"
            "import chalk from 'npm:chalk';\n"
            "import { join } from 'https://deno.land/std@0.200.0/path/mod.ts';\n"
        ),
    })
    result = analyse(root)
    assert result.targets("mod:js:main.js", "imports") == [
        "dep:npm:@vue/reactivity", "dep:npm:chalk", "dep:npm:lit", "dep:npm:mp4box", "dep:npm:three",
        "mod:js:https://deno.land/std@0.200.0/path/mod.ts",  # no npm package: a module the tree does not hold
    ]
    assert result.nodes["dep:npm:three"]["attrs"]["declared"] is True


def test_an_alias_into_node_modules_imports_the_package_there(tmp_path):
    # panel's tsconfig: bokehjs' built modules and preact standing in for react, both from node_modules
    root = write_tree(tmp_path / "panel", {
        "package.json": '{"name": "panel", "dependencies": {"@bokeh/bokehjs": "^3.10", "preact": "^10"}}\n',
        "tsconfig.json": (
            '{"compilerOptions": {"paths": {"@bokehjs/*": ["node_modules/@bokeh/bokehjs/build/js/lib/*"],'
            ' "react": ["node_modules/preact/compat"]}}}\n'
        ),
        "models/layout.ts": 'import { div } from "@bokehjs/core/dom";\nimport React from "react";\n',
    })
    result = analyse(root)
    assert result.targets("mod:js:models/layout.ts", "imports") == ["dep:npm:@bokeh/bokehjs", "dep:npm:preact"]
    assert not [node for node in result.of_kind("module").values() if node["attrs"].get("missing")]


def test_a_condition_whose_file_the_tree_lacks_yields_to_the_next(tmp_path):
    # @babel/core's package.json: "types" names declaration files the package never ships, and its own sources
    # sit under a condition of its own ("babel-src")
    conditions = (
        '{"babel-src": {"browser": "./src/files/index-browser.ts", "default": "./src/files/index.ts"},'
        ' "types": "./lib/files/index.d.ts", "default": "./lib/files/index.js"}'
    )
    root = write_tree(tmp_path / "r", {
        "published/package.json": (
            f'{{"name": "@babel/core", "imports": {{"#files": {conditions}}},'
            ' "exports": {".": {"types": "./lib/index.d.ts", "default": "./lib/index.js"}}}\n'
        ),
        "published/lib/index.js": 'import "#files";\n',
        "published/lib/files/index.js": "export const files = 1;\n",
        "source/package.json": f'{{"name": "@babel/source", "imports": {{"#files": {conditions}}}}}\n',
        "source/src/index.ts": 'import "#files";\n',
        "source/src/files/index.ts": "export const files = 1;\n",
        "app.js": 'import babel from "@babel/core";\n',
    })
    result = analyse(root)
    assert result.targets("mod:js:published/lib/index.js", "imports") == ["mod:js:published/lib/files/index.js"]
    assert result.targets("mod:js:source/src/index.ts", "imports") == ["mod:js:source/src/files/index.ts"]
    assert result.targets("mod:js:app.js", "imports") == ["mod:js:published/lib/index.js"]
