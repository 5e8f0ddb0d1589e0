"""
The corpus check: one synthetic repository holding every pattern the analysis must get right (a src layout
with a namespace package, from-imports of submodules, stubs, same-named files, import kinds, newer syntax, an
import name unlike its distribution, a name imported from a namespace package, ``pytest.importorskip``, a JS
workspace with a tsconfig alias and subpath exports, variance modifiers, ``export declare``, ``export type *`` and
``export * as``, destructuring and ``exports["x"]`` exports, ``import x = require()``, an imported stylesheet,
nested tsconfig aliases, a subpath import (``#theme``), a workspace package whose entry the build writes, a pnpm
catalog, a lockfile's path dependency, every ecosystem's manifest (a Cargo dependency written as a table, one
taken from the workspace, a gem from git), a Dockerfile ARG, a compose service built from it, CI, Kubernetes,
Terraform, a folder of scripts named as a declared distribution, a package's module importing its neighbour as
a script does, a type parameter's default after a bound, a Home Assistant integration's manifest, a catch-all
``paths`` alias, types from a declared ``@types`` package, a package from a CDN, a Django project inside its
package, an alias into ``node_modules``, a reserved word imported by name, a script's inline metadata, a lazy
import, another distribution's portion of a shared namespace), analysed once, its facts compared exactly: a fact
gained or lost anywhere fails here.
"""

import pytest

from tests.pipeline_support import analyse, write_tree

CORPUS = {
    # Python: a src layout with a namespace package, from-imports of submodules, stubs, import kinds
    "pyproject.toml": '[project]\nname = "shop"\ndependencies = ["django-taggit>=5", "PyYAML", "httpx", "packaging"]\n',
    "packaging/release.py": "from packaging.version import Version\n",  # scripts, beside the declared packaging
    "src/shop/grammar/__init__.py": "",
    "src/shop/grammar/lexer.py": "",
    "src/shop/grammar/listener.py": "from lexer import Lexer\n",  # run as a script too
    "custom_components/hue/manifest.json": '{"domain": "hue", "requirements": ["aiohue==4.7.1"]}\n',
    "custom_components/hue/__init__.py": "import aiohue\n",
    "portal/__init__.py": "",
    "portal/manage.py": "lazy import django\n",  # a Django project inside its package, Python 3.15's lazy import
    "portal/core/__init__.py": "",
    "portal/orders/__init__.py": "from core import signals\nfrom plone.app.iterate import relation\n",
    "portal/core/signals.py": "",
    "scripts/report.py": (
        "# /// script\n# dependencies = [\"rich>=13\"]\n# ///\nimport rich\n"
    ),
    "src/plone/api/__init__.py": "",  # the repository's portion of the plone namespace
    "src/shop/__init__.py": "",
    "src/shop/models.py": "import taggit\nfrom shop.util import a, b\n",
    "src/shop/util/__init__.py": "HELPER = 1\n",
    "src/shop/util/a.py": "",
    "src/shop/util/b.py": "",
    "src/shop/plugins/loader.py": (  # a namespace package: no __init__.py
        "from __future__ import annotations\n"
        "from typing import TYPE_CHECKING\n"
        "from ..models import Tag\n"
        "if TYPE_CHECKING:\n    import yaml\n"
        "try:\n    import orjson\nexcept ImportError:\n    orjson = None\n"
        "def load(name):\n    import importlib\n    return importlib.import_module('shop.util.a')\n"
        "import httpx\n"
        "client = httpx.Client(base_url='https://pay.example.com')\n"
        "client.post('/charge')\n"
    ),
    "src/shop/py.typed": "",
    "stubs/shop_ext/__init__.pyi": "from _typeshed import StrPath\n",
    "tests/conftest.py": "import pytest\n",
    "tests/api/conftest.py": "import pytest\nnp = pytest.importorskip('numpy')\n",
    "tools/gen.py": "type Pair[T = int] = tuple[T, T]\nfrom google import genai\nclass Box[T: int = int]: ...\n",
    # JavaScript/TypeScript: a workspace package, a tsconfig alias, type-only and dynamic imports, fetch
    "web/package.json": (
        '{"name": "web", "dependencies": {"@acme/ui": "workspace:*", "react": "catalog:"},'
        ' "devDependencies": {"@types/estree": "^1"}}\n'
    ),
    "pnpm-workspace.yaml": "packages:\n  - web\n  - packages/*\ncatalog:\n  react: ^18\n",
    "web/tsconfig.json": (
        '{\n  // aliases\n  "compilerOptions": {"baseUrl": ".", "paths": {"@/*": ["src/*"], "@/env/*": ["config/*"],'
        ' "*": ["src/*"], "@bokehjs/*": ["node_modules/@bokeh/bokehjs/build/js/lib/*"]}},\n}\n'
    ),
    "web/src/walk.d.ts": 'import { Node } from "estree";\n',
    "web/src/chunk.js": 'import{in as g}from"./vendor.js";\nimport { div } from "@bokehjs/core/dom";\n',
    "web/src/vendor.js": "const a = 1;\nexport { a as in };\n",
    "web/config/env.ts": "export const { API_URL, ...others } = process.env;\n",  # a destructuring export
    "web/src/api.ts": (
        "export interface Reader<out T> { read(): T }\nexport interface Cache<in out K, out V = never> {}\n"
        'export declare function open(): void;\nexport type * from "./later";\n'
    ),
    "web/src/app.css": "body {}\n",
    "web/src/app.tsx": (
        'import type { Reader } from "@/api";\nimport { Button } from "@acme/ui";\nimport { Card } from "@acme/ui/card";\nimport React from "react";\nimport "./app.css";\n'
        'import { kit } from "@acme/kit";\n'
        'import { API_URL } from "@/env/env";\nconst later = import("./later");\nfetch("https://api.example.com/orders", { method: "PUT" });\n'
        'import confetti from "https://cdn.jsdelivr.net/npm/canvas-confetti@1.9.3/+esm";\n'
    ),
    "web/src/later.ts": 'import fs = require("fs");\nexport * as api from "./api";\nexport default 1;\n',
    "packages/ui/package.json": (
        '{"name": "@acme/ui", "main": "index.js", "exports": {".": "./index.js", "./card": "./src/card.js"},'
        ' "imports": {"#theme": "./src/theme.js"}}\n'
    ),
    "packages/ui/src/theme.js": "export const theme = 1;\n",
    "packages/kit/package.json": '{"name": "@acme/kit", "main": "lib/index.js"}\n',  # lib/ is not committed
    "packages/kit/tsconfig.json": '{"compilerOptions": {"outDir": "lib", "rootDir": "src"}}\n',
    "packages/kit/src/index.ts": "export const kit = 1;\n",
    "packages/ui/index.js": 'module.exports = { Button: 1 };\nexports["Icon"] = 2;\n',
    "packages/ui/src/card.js": 'const { Button } = require("@acme/ui");\nconst { theme } = require("#theme");\n',
    # Other ecosystems
    "svc/go.mod": "module example.com/svc\n\nrequire (\n\tgithub.com/google/uuid v1.6.0\n\tgolang.org/x/sys v0.20.0 // indirect\n)\n",
    "crates/Cargo.toml": '[workspace]\nmembers = ["tool"]\n\n[workspace.dependencies]\nlog = "0.4"\n',
    "crates/tool/Cargo.toml": '[package]\nname = "tool"\n\n[dependencies]\nserde = "1"\nlog.workspace = true\n\n[dependencies.anyhow]\nversion = "1"\n',
    "java/pom.xml": "<project><dependencies><dependency><groupId>junit</groupId><artifactId>junit</artifactId><version>4.13.2</version></dependency></dependencies></project>\n",
    "net/App.csproj": '<Project><ItemGroup><PackageReference Include="Serilog" Version="3.1.1" /></ItemGroup></Project>\n',
    "php/composer.json": '{"require": {"php": ">=8.1", "monolog/monolog": "^3.0"}}\n',
    "ruby/Gemfile.lock": (
        "GIT\n  remote: https://github.com/rack/rack-session.git\n  revision: 4b8d0e8\n  specs:\n    rack-session (2.0.0)\n\n"
        "PATH\n  remote: .\n  specs:\n    app (0.1.0)\n\nGEM\n  specs:\n    rack (3.0.9)\n\nDEPENDENCIES\n  app!\n  rack\n  rack-session!\n"
    ),
    "legacy/poetry.lock": (  # a path dependency is not a locked package
        '[[package]]\nname = "shop"\nversion = "0.1.0"\n\n[package.source]\ntype = "directory"\nurl = ".."\n\n'
        '[[package]]\nname = "requests"\nversion = "2.32.3"\n'
    ),
    "legacy/setup.py": "from setuptools import setup\nrequires = ['requests>=2']\nsetup(install_requires=requires)\n",
    # Where it runs
    "Dockerfile": "ARG PY=3.12\nFROM python:${PY}-slim AS base\nFROM base",  # no final newline
    "compose.yaml": "services:\n  web:\n    build: .\n",
    ".github/workflows/ci.yml": "on: push\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4\n",
    "deploy/web.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n        - name: web\n          image: shop/web:1.0\n",
    "infra/main.tf": 'terraform {\n  required_providers {\n    aws = { source = "hashicorp/aws", version = "~> 5.0" }\n  }\n}\nvariable "region" {}\n',
}


EXPECTED_EDGES = [
    ('ci:.github/workflows/ci.yml#test', 'uses_action', 'action:actions/checkout', {'ref': 'v4'}),
    ('file:.github/workflows/ci.yml', 'defines', 'ci:.github/workflows/ci.yml#test', {}),
    ('file:Dockerfile', 'uses_image', 'img:python:3.12-slim', {'stage': 'base', 'written': 'python:${PY}-slim'}),
    ('compose:compose.yaml#web', 'built_from', 'file:Dockerfile', {}),
    ('file:compose.yaml', 'defines', 'compose:compose.yaml#web', {}),
    ('file:crates/Cargo.toml', 'declares', 'dep:cargo:log', {'scope': 'workspace', 'spec': '0.4'}),
    ('file:crates/tool/Cargo.toml', 'declares', 'dep:cargo:anyhow', {'scope': 'main', 'spec': '1'}),
    ('file:crates/tool/Cargo.toml', 'declares', 'dep:cargo:log', {'scope': 'main', 'spec': '0.4', 'workspace': True}),
    ('file:crates/tool/Cargo.toml', 'declares', 'dep:cargo:serde', {'scope': 'main', 'spec': '1'}),
    ('file:deploy/web.yaml', 'defines', 'k8s:deploy/web.yaml#Deployment//web', {}),
    ('file:infra/main.tf', 'declares', 'dep:terraform:hashicorp/aws', {'scope': 'provider', 'spec': '~> 5.0'}),
    ('file:infra/main.tf', 'defines', 'tf:infra:variable.region', {}),
    ('file:java/pom.xml', 'declares', 'dep:maven:junit:junit', {'scope': 'compile', 'spec': '4.13.2'}),
    ('file:legacy/poetry.lock', 'locks', 'dep:pypi:requests', {'version': '2.32.3'}),
    ('file:legacy/setup.py', 'declares', 'dep:pypi:requests', {'scope': 'main', 'spec': '>=2'}),
    ('file:net/App.csproj', 'declares', 'dep:nuget:serilog', {'scope': 'main', 'spec': '3.1.1'}),
    ('file:php/composer.json', 'declares', 'dep:composer:monolog/monolog', {'scope': 'main', 'spec': '^3.0'}),
    ('file:pyproject.toml', 'declares', 'dep:pypi:django-taggit', {'scope': 'main', 'spec': '>=5'}),
    ('file:pyproject.toml', 'declares', 'dep:pypi:httpx', {'scope': 'main', 'spec': ''}),
    ('file:pyproject.toml', 'declares', 'dep:pypi:packaging', {'scope': 'main', 'spec': ''}),
    ('mod:py:packaging.release', 'imports', 'dep:pypi:packaging', {}),
    ('mod:py:shop.grammar.listener', 'imports', 'mod:py:shop.grammar.lexer', {}),
    ('file:custom_components/hue/manifest.json', 'declares', 'dep:pypi:aiohue', {'scope': 'main', 'spec': '==4.7.1'}),
    ('mod:py:custom_components.hue', 'imports', 'dep:pypi:aiohue', {}),
    ('mod:py:tools.gen', 'defines', 'sym:py:tools.gen.Box', {}),
    ('file:web/package.json', 'declares', 'dep:npm:@types/estree', {'scope': 'dev', 'spec': '^1'}),
    ('mod:js:web/src/walk.d.ts', 'imports', 'dep:npm:@types/estree', {}),
    ('mod:js:web/src/app.tsx', 'imports', 'dep:npm:canvas-confetti', {}),
    ('mod:js:web/src/chunk.js', 'imports', 'mod:js:web/src/vendor.js', {}),
    ('mod:js:web/src/chunk.js', 'imports', 'dep:npm:@bokeh/bokehjs', {}),
    ('mod:js:web/src/vendor.js', 'exports', 'sym:js:web/src/vendor.js#in', {}),
    ('mod:py:portal.manage', 'imports', 'dep:pypi:django', {'lazy': True}),
    ('mod:py:portal.orders', 'imports', 'mod:py:portal.core.signals', {}),
    ('mod:py:portal.orders', 'imports', 'dep:pypi:plone-app-iterate', {}),
    ('file:scripts/report.py', 'declares', 'dep:pypi:rich', {'scope': 'script', 'spec': '>=13'}),
    ('mod:py:scripts.report', 'imports', 'dep:pypi:rich', {}),
    ('file:pyproject.toml', 'declares', 'dep:pypi:pyyaml', {'scope': 'main', 'spec': ''}),
    ('file:ruby/Gemfile.lock', 'locks', 'dep:gem:rack', {'version': '3.0.9'}),
    ('file:ruby/Gemfile.lock', 'locks', 'dep:gem:rack-session', {'version': '2.0.0'}),
    ('file:svc/go.mod', 'declares', 'dep:go:github.com/google/uuid', {'scope': 'main', 'spec': 'v1.6.0'}),
    ('file:svc/go.mod', 'locks', 'dep:go:golang.org/x/sys', {'version': 'v0.20.0'}),
    ('file:web/package.json', 'declares', 'dep:npm:@acme/ui', {'scope': 'main', 'spec': 'workspace:*'}),
    ('file:web/package.json', 'declares', 'dep:npm:react', {'catalog': 'default', 'scope': 'main', 'spec': '^18'}),
    ('k8s:deploy/web.yaml#Deployment//web', 'uses_image', 'img:shop/web:1.0', {}),
    ('mod:js:packages/kit/src/index.ts', 'exports', 'sym:js:packages/kit/src/index.ts#kit', {}),
    ('mod:js:packages/ui/index.js', 'exports', 'sym:js:packages/ui/index.js#Button', {}),
    ('mod:js:packages/ui/index.js', 'exports', 'sym:js:packages/ui/index.js#Icon', {}),
    ('mod:js:packages/ui/src/card.js', 'imports', 'mod:js:packages/ui/index.js', {}),
    ('mod:js:packages/ui/src/card.js', 'imports', 'mod:js:packages/ui/src/theme.js', {}),
    ('mod:js:packages/ui/src/theme.js', 'exports', 'sym:js:packages/ui/src/theme.js#theme', {}),
    ('mod:js:web/config/env.ts', 'exports', 'sym:js:web/config/env.ts#API_URL', {}),
    ('mod:js:web/config/env.ts', 'exports', 'sym:js:web/config/env.ts#others', {}),
    ('mod:js:web/src/api.ts', 'exports', 'sym:js:web/src/api.ts#Cache', {}),
    ('mod:js:web/src/api.ts', 'exports', 'sym:js:web/src/api.ts#Reader', {}),
    ('mod:js:web/src/api.ts', 'exports', 'sym:js:web/src/api.ts#open', {}),
    ('mod:js:web/src/api.ts', 'imports', 'mod:js:web/src/later.ts', {'type_only': True}),
    ('mod:js:web/src/app.tsx', 'imports', 'file:web/src/app.css', {}),
    ('mod:js:web/src/app.tsx', 'calls', 'svc:api.example.com', {'client': 'fetch', 'method': 'PUT', 'url': 'https://api.example.com/orders'}),
    ('mod:js:web/src/app.tsx', 'imports', 'dep:npm:react', {}),
    ('mod:js:web/src/app.tsx', 'imports', 'mod:js:packages/kit/src/index.ts', {}),
    ('mod:js:web/src/app.tsx', 'imports', 'mod:js:packages/ui/index.js', {}),
    ('mod:js:web/src/app.tsx', 'imports', 'mod:js:web/config/env.ts', {}),
    ('mod:js:web/src/app.tsx', 'imports', 'mod:js:packages/ui/src/card.js', {}),
    ('mod:js:web/src/app.tsx', 'imports', 'mod:js:web/src/api.ts', {'type_only': True}),
    ('mod:js:web/src/app.tsx', 'imports', 'mod:js:web/src/later.ts', {'dynamic': True}),
    ('mod:js:web/src/later.ts', 'exports', 'sym:js:web/src/later.ts#api', {}),
    ('mod:js:web/src/later.ts', 'exports', 'sym:js:web/src/later.ts#default', {}),
    ('mod:js:web/src/later.ts', 'imports', 'mod:js:web/src/api.ts', {}),
    ('mod:js:web/src/later.ts', 'imports', 'std:node:fs', {}),
    ('mod:py:tests.api.conftest', 'imports', 'dep:pypi:numpy', {'dynamic': True, 'optional': True}),
    ('mod:py:shop.models', 'imports', 'dep:pypi:django-taggit', {}),
    ('mod:py:shop.models', 'imports', 'mod:py:shop.util.a', {}),
    ('mod:py:shop.models', 'imports', 'mod:py:shop.util.b', {}),
    ('mod:py:shop.plugins.loader', 'calls', 'svc:pay.example.com', {'client': 'httpx', 'method': 'POST', 'url': 'https://pay.example.com/charge'}),
    ('mod:py:shop.plugins.loader', 'defines', 'sym:py:shop.plugins.loader.load', {}),
    ('mod:py:shop.plugins.loader', 'imports', 'dep:pypi:httpx', {}),
    ('mod:py:shop.plugins.loader', 'imports', 'dep:pypi:orjson', {'optional': True}),
    ('mod:py:shop.plugins.loader', 'imports', 'dep:pypi:pyyaml', {'type_only': True}),
    ('mod:py:shop.plugins.loader', 'imports', 'mod:py:shop.models', {}),
    ('mod:py:shop.plugins.loader', 'imports', 'mod:py:shop.util.a', {'dynamic': True, 'local': True}),
    ('mod:py:shop.plugins.loader', 'imports', 'std:py:__future__', {}),
    ('mod:py:shop.plugins.loader', 'imports', 'std:py:importlib', {'local': True}),
    ('mod:py:shop.plugins.loader', 'imports', 'std:py:typing', {}),
    ('mod:py:stubs.shop_ext', 'imports', 'std:py:_typeshed', {}),
    ('mod:py:tests.api.conftest', 'imports', 'dep:pypi:pytest', {}),
    ('mod:py:tests.conftest', 'imports', 'dep:pypi:pytest', {}),
    ('mod:py:tools.gen', 'defines', 'sym:py:tools.gen.Pair', {}),
    ('mod:py:tools.gen', 'imports', 'dep:pypi:google-genai', {}),
]

EXPECTED_NODES = [
    'action:actions/checkout',
    'ci:.github/workflows/ci.yml#test',
    'compose:compose.yaml#web',
    'dep:cargo:anyhow',
    'dep:cargo:log',
    'dep:cargo:serde',
    'dep:composer:monolog/monolog',
    'dep:gem:rack',
    'dep:gem:rack-session',
    'dep:go:github.com/google/uuid',
    'dep:go:golang.org/x/sys',
    'dep:maven:junit:junit',
    'dep:npm:@acme/ui',
    'dep:npm:@bokeh/bokehjs',
    'dep:npm:@types/estree',
    'dep:npm:canvas-confetti',
    'dep:npm:react',
    'dep:nuget:serilog',
    'dep:pypi:aiohue',
    'dep:pypi:django',
    'dep:pypi:django-taggit',
    'dep:pypi:google-genai',
    'dep:pypi:httpx',
    'dep:pypi:numpy',
    'dep:pypi:orjson',
    'dep:pypi:packaging',
    'dep:pypi:plone-app-iterate',
    'dep:pypi:pytest',
    'dep:pypi:pyyaml',
    'dep:pypi:requests',
    'dep:pypi:rich',
    'dep:terraform:hashicorp/aws',
    'img:python:3.12-slim',
    'img:shop/web:1.0',
    'k8s:deploy/web.yaml#Deployment//web',
    'mod:js:packages/kit/src/index.ts',
    'mod:js:packages/ui/index.js',
    'mod:js:packages/ui/src/card.js',
    'mod:js:packages/ui/src/theme.js',
    'mod:js:web/config/env.ts',
    'mod:js:web/src/api.ts',
    'mod:js:web/src/app.tsx',
    'mod:js:web/src/chunk.js',
    'mod:js:web/src/later.ts',
    'mod:js:web/src/vendor.js',
    'mod:js:web/src/walk.d.ts',
    'mod:py:custom_components.hue',
    'mod:py:packaging.release',
    'mod:py:plone.api',
    'mod:py:portal',
    'mod:py:portal.core',
    'mod:py:portal.core.signals',
    'mod:py:portal.manage',
    'mod:py:portal.orders',
    'mod:py:scripts.report',
    'mod:py:shop',
    'mod:py:shop.grammar',
    'mod:py:shop.grammar.lexer',
    'mod:py:shop.grammar.listener',
    'mod:py:shop.models',
    'mod:py:shop.plugins.loader',
    'mod:py:shop.util',
    'mod:py:shop.util.a',
    'mod:py:shop.util.b',
    'mod:py:stubs.shop_ext',
    'mod:py:tests.api.conftest',
    'mod:py:tests.conftest',
    'mod:py:tools.gen',
    'repo:',
    'std:node:fs',
    'std:py:__future__',
    'std:py:_typeshed',
    'std:py:importlib',
    'std:py:typing',
    'svc:api.example.com',
    'svc:pay.example.com',
    'sym:js:packages/kit/src/index.ts#kit',
    'sym:js:packages/ui/index.js#Button',
    'sym:js:packages/ui/index.js#Icon',
    'sym:js:packages/ui/src/theme.js#theme',
    'sym:js:web/config/env.ts#API_URL',
    'sym:js:web/config/env.ts#others',
    'sym:js:web/src/api.ts#Cache',
    'sym:js:web/src/api.ts#Reader',
    'sym:js:web/src/api.ts#open',
    'sym:js:web/src/later.ts#api',
    'sym:js:web/src/later.ts#default',
    'sym:js:web/src/vendor.js#in',
    'sym:py:shop.plugins.loader.load',
    'sym:py:tools.gen.Box',
    'sym:py:tools.gen.Pair',
    'tf:infra:variable.region',
]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return analyse(write_tree(tmp_path_factory.mktemp("corpus") / "corpus", CORPUS))


def test_the_corpus_gives_exactly_the_expected_edges(corpus):
    found = sorted(
        ((edge["src"], edge["kind"], edge["dst"], edge.get("attrs") or {})
         for edge in corpus.edges
         if not (edge["kind"] == "defines" and edge["src"].startswith("file:") and edge["dst"].startswith("mod:"))),
        key=lambda edge: edge[:3],
    )
    assert found == sorted(EXPECTED_EDGES, key=lambda edge: edge[:3])


def test_the_corpus_gives_exactly_the_expected_nodes_and_no_diagnostic(corpus):
    assert sorted(node for node in corpus.nodes if not node.startswith("file:")) == EXPECTED_NODES
    assert sorted(node for node in corpus.nodes if node.startswith("file:")) == sorted(f"file:{path}" for path in CORPUS)


def test_the_corpus_workspace_package_is_a_dependency_in_the_repository(corpus):
    inside = sorted(node for node, fact in corpus.nodes.items() if fact["kind"] == "dependency" and fact["attrs"]["in_repository"])
    assert inside == ["dep:npm:@acme/ui"]
