"""Each extractor on small fixture repositories written by the test, read through the whole pipeline."""

import json

import pytest

from tests.pipeline_support import analyse, write_tree


def evidence(node_or_edge):
    return [(item["path"], item["lines"], item["extractor"].split("@")[0]) for item in node_or_edge["evidence"]]


# -- Python ----------------------------------------------------------------------------------------------------


@pytest.fixture
def python_repo(tmp_path):
    return write_tree(tmp_path / "py", {
        "pkg/__init__.py": "",
        "pkg/models.py": "class Model:\n    pass\n",
        "pkg/sub/__init__.py": "from .. import models\nfrom ..models import Model\n",
        "pkg/app.py": (
            "import os\n"
            "import yaml\n"
            "from pkg.models import Model\n"
            "from . import sub\n"
            "import requests\n"
            "\n"
            "\n"
            "@decorator\n"
            "class App(Model):\n"
            "    def run(self):\n"
            "        import json\n"
            "        return requests.get('https://api.example.com/v1/items?page=2')\n"
            "\n"
            "\n"
            "async def fetch_all():\n"
            "    import httpx\n"
            "    async with httpx.AsyncClient(base_url='https://svc.internal:8443') as client:\n"
            "        return await client.get('/x')\n"
        ),
        "src/tool/__init__.py": "",
        "src/tool/cli.py": "from tool import helpers\nfrom urllib.request import urlopen\nurlopen(f'http://legacy.example.org/{x}')\n",
        "src/tool/helpers.py": "def helper():\n    pass\n",
        "broken.py": "def broken(:\n    pass\n",
    })


def test_python_modules_are_named_from_their_package_chain(python_repo):
    modules = analyse(python_repo).of_kind("module")
    assert {node["attrs"]["name"] for node in modules.values()} == {
        "pkg", "pkg.models", "pkg.sub", "pkg.app", "tool", "tool.cli", "tool.helpers", "broken",
    }
    assert evidence(modules["mod:py:pkg.app"]) == [("pkg/app.py", [1, 18], "python")]


def test_python_imports_resolve_to_repository_modules_stdlib_or_distributions(python_repo):
    result = analyse(python_repo)
    assert result.targets("mod:py:pkg.app", "imports") == [
        "dep:pypi:httpx", "dep:pypi:pyyaml", "dep:pypi:requests", "mod:py:pkg.models", "mod:py:pkg.sub", "std:py:json", "std:py:os",
    ]
    assert result.targets("mod:py:pkg.sub", "imports") == ["mod:py:pkg.models"]
    assert result.targets("mod:py:tool.cli", "imports") == ["mod:py:tool.helpers", "std:py:urllib"]
    nested = next(edge for edge in result.edges_from("mod:py:pkg.app", "imports") if edge["dst"] == "std:py:json")
    assert evidence(nested) == [("pkg/app.py", [11, 11], "python")]
    assert result.nodes["dep:pypi:pyyaml"]["attrs"] == {
        "declared": False, "direct": False, "ecosystem": "pypi", "in_repository": False, "locked": False, "name": "pyyaml",
    }


def test_python_top_level_classes_and_functions_have_their_spans(python_repo):
    result = analyse(python_repo)
    assert result.targets("mod:py:pkg.app", "defines") == ["sym:py:pkg.app.App", "sym:py:pkg.app.fetch_all"]
    app, fetch_all = result.nodes["sym:py:pkg.app.App"], result.nodes["sym:py:pkg.app.fetch_all"]
    assert (app["kind"], evidence(app)) == ("class", [("pkg/app.py", [8, 12], "python")])  # from its decorator
    assert (fetch_all["kind"], evidence(fetch_all)) == ("function", [("pkg/app.py", [15, 18], "python")])
    assert "sym:py:pkg.app.run" not in result.nodes  # a method is not top-level


def test_python_http_calls_with_a_literal_url_become_services(python_repo):
    result = analyse(python_repo)
    assert sorted(result.of_kind("service")) == ["svc:api.example.com", "svc:legacy.example.org", "svc:svc.internal:8443"]
    calls = {edge["dst"]: edge for edge in result.edges if edge["kind"] == "calls"}
    assert calls["svc:api.example.com"]["src"] == "mod:py:pkg.app"
    assert calls["svc:api.example.com"]["attrs"] == {"client": "requests", "method": "GET", "url": "https://api.example.com/v1/items"}
    assert evidence(calls["svc:api.example.com"]) == [("pkg/app.py", [12, 12], "python")]
    assert calls["svc:svc.internal:8443"]["attrs"]["client"] == "httpx"
    assert calls["svc:legacy.example.org"]["attrs"]["client"] == "urllib"


def test_a_python_syntax_error_is_a_diagnostic_and_the_rest_is_analysed(python_repo):
    result = analyse(python_repo)
    diagnostic = result.nodes["diag:parse-error:broken.py"]
    assert diagnostic["attrs"]["code"] == "parse-error"
    assert evidence(diagnostic) == [("broken.py", [1, 1], "python")]
    assert result.summary["diagnostics"] == 1
    assert "mod:py:broken" in result.nodes and result.summary["modules"] == {"python": 8}


def test_a_package_shaped_root_takes_the_name_its_own_imports_use(tmp_path):
    root = write_tree(tmp_path / "anything", {
        "__init__.py": "",
        "db/__init__.py": "from mylib.utils import tool\n",
        "utils.py": "def tool():\n    pass\n",
    })
    result = analyse(root)
    assert "mod:py:mylib.db" in result.nodes and "mod:py:mylib.utils" in result.nodes
    assert result.targets("mod:py:mylib.db", "imports") == ["mod:py:mylib.utils"]


# -- JavaScript and TypeScript -----------------------------------------------------------------------------


def test_javascript_and_typescript_imports_exports_and_http_calls(tmp_path):
    root = write_tree(tmp_path / "js", {
        "src/index.js": (
            "import React from 'react';\n"
            "import { helper } from './util';\n"
            "const fs = require('node:fs');\n"
            "const sub = require('@scope/pkg/sub');\n"
            "export function main() { return fetch('https://api.github.com/repos?x=1'); }\n"
            "export default class App {}\n"
            "axios.post(`https://hooks.example.com/${id}`, body);\n"
            "const lazy = () => import('./lazy.mjs');\n"
        ),
        "src/util.ts": "import type { T } from './types';\nexport const helper = 1;\nexport interface Shape { a: number }\n",
        "src/types.ts": "export type T = string;\n",
        "src/view.tsx": "import { helper } from './util';\nexport const View = () => <div>{helper}</div>;\n",
        "src/lazy.mjs": "module.exports = { a, b: 2 };\n",
        "vendor/lib.min.js": "!function(){fetch('https://cdn.example.com/x')}();\n",
    })
    result = analyse(root)
    assert result.targets("mod:js:src/index.js", "imports") == [
        "dep:npm:@scope/pkg", "dep:npm:react", "mod:js:src/lazy.mjs", "mod:js:src/util.ts", "std:node:fs",
    ]
    assert result.targets("mod:js:src/util.ts", "imports") == ["mod:js:src/types.ts"]
    assert result.targets("mod:js:src/view.tsx", "imports") == ["mod:js:src/util.ts"]
    assert result.targets("mod:js:src/index.js", "exports") == ["sym:js:src/index.js#default", "sym:js:src/index.js#main"]
    assert result.targets("mod:js:src/util.ts", "exports") == ["sym:js:src/util.ts#Shape", "sym:js:src/util.ts#helper"]
    assert result.targets("mod:js:src/lazy.mjs", "exports") == ["sym:js:src/lazy.mjs#a", "sym:js:src/lazy.mjs#b"]
    main = result.nodes["sym:js:src/index.js#main"]
    assert main["attrs"] == {"declares": "function", "name": "main"}
    assert evidence(main) == [("src/index.js", [5, 5], "javascript")]
    assert result.nodes["mod:js:src/util.ts"]["attrs"]["language"] == "typescript"
    assert sorted(result.of_kind("service")) == ["svc:api.github.com", "svc:hooks.example.com"]  # not the minified file
    call = next(edge for edge in result.edges if edge["dst"] == "svc:hooks.example.com")
    assert call["attrs"] == {"client": "axios", "method": "POST", "url": "https://hooks.example.com/"}
    # A minified file is a module that nothing parsed: the inventory's evidence, no edges of its own.
    assert evidence(result.nodes["mod:js:vendor/lib.min.js"]) == [("vendor/lib.min.js", [1, 1], "inventory")]
    assert result.edges_from("mod:js:vendor/lib.min.js") == []


def test_an_import_of_a_file_too_large_or_minified_to_parse_resolves_to_its_module(tmp_path):
    # Playwright's lib/index.js requires ./coreBundle, a 4 MB bundle: the file exists, only its facts are unknown.
    big = "x = 1\n" * 400
    root = write_tree(tmp_path / "r", {
        "lib/index.js": "const core = require('./coreBundle');\nimport $ from './vendor/jquery.min.js';\n",
        "lib/coreBundle.js": "var a = 1;\n" * 400,
        "lib/vendor/jquery.min.js": "!function(){}();\n",
        "pkg/__init__.py": "",
        "pkg/app.py": "from pkg import generated\nfrom . import big_pb2\n",
        "pkg/generated.py": big,
        "pkg/big_pb2.py": big,
    })
    result = analyse(root, max_file_bytes=1024)
    assert result.targets("mod:js:lib/index.js", "imports") == ["mod:js:lib/coreBundle.js", "mod:js:lib/vendor/jquery.min.js"]
    assert result.targets("mod:py:pkg.app", "imports") == ["mod:py:pkg.big_pb2", "mod:py:pkg.generated"]
    for module in ("mod:js:lib/coreBundle.js", "mod:py:pkg.generated", "mod:py:pkg.big_pb2"):
        node = result.nodes[module]
        assert "missing" not in node["attrs"] and node["evidence"][0]["extractor"].startswith("inventory@")
    assert result.nodes["file:pkg/generated.py"]["attrs"]["skipped"] == "too-large"


def test_a_javascript_syntax_error_is_a_diagnostic_with_what_was_recovered(tmp_path):
    root = write_tree(tmp_path / "js", {"a.js": "import x from 'left-pad';\nfunction (\n"})
    result = analyse(root)
    assert result.nodes["diag:parse-error:a.js"]["evidence"][0]["lines"] == [2, 2]
    assert result.targets("mod:js:a.js", "imports") == ["dep:npm:left-pad"]


# -- manifests and lockfiles -------------------------------------------------------------------------------


def dependency_edges(result, kind):
    return sorted((edge["src"][5:], edge["dst"], tuple(sorted(edge["attrs"].items())), edge["evidence"][0]["lines"][0])
                  for edge in result.edges if edge["kind"] == kind)


def test_python_manifests_declare_dependencies_with_scope_and_line(tmp_path):
    root = write_tree(tmp_path / "m", {
        "requirements.txt": "# pinned\nDjango==5.2.1 --hash=sha256:abc\n-r base.txt\nrequests[socks]>=2.31 ; python_version>'3.8'\n"
                            "-e git+https://example.com/x.git#egg=My_Pkg\n",
        "requirements-dev.txt": "pytest\n",
        "pyproject.toml": (
            "[project]\nname = 'demo'\ndependencies = [\n  'httpx>=0.27',\n]\n"
            "[project.optional-dependencies]\nyaml = ['PyYAML']\n"
            "[tool.poetry.dependencies]\npython = '^3.11'\nrich = '^13'\n"
            "[tool.poetry.group.test.dependencies]\nhypothesis = { version = '^6' }\n"
        ),
        "setup.cfg": "[options]\ninstall_requires =\n    attrs>=23\n[options.extras_require]\ndocs = sphinx\n",
    })
    result = analyse(root)
    assert dependency_edges(result, "declares") == [
        ("pyproject.toml", "dep:pypi:httpx", (("scope", "main"), ("spec", ">=0.27")), 4),
        ("pyproject.toml", "dep:pypi:hypothesis", (("scope", "group:test"), ("spec", "^6")), 12),
        ("pyproject.toml", "dep:pypi:pyyaml", (("scope", "optional:yaml"), ("spec", "")), 7),
        ("pyproject.toml", "dep:pypi:rich", (("scope", "main"), ("spec", "^13")), 10),
        ("requirements-dev.txt", "dep:pypi:pytest", (("scope", "dev"), ("spec", "")), 1),
        ("requirements.txt", "dep:pypi:django", (("scope", "main"), ("spec", "==5.2.1")), 2),
        ("requirements.txt", "dep:pypi:my-pkg", (("scope", "main"), ("spec", "editable")), 5),
        ("requirements.txt", "dep:pypi:requests", (("scope", "main"), ("spec", '>=2.31; python_version > "3.8"')), 4),
        ("setup.cfg", "dep:pypi:attrs", (("scope", "main"), ("spec", ">=23")), 3),
        ("setup.cfg", "dep:pypi:sphinx", (("scope", "optional:docs"), ("spec", "")), 5),
    ]
    assert result.nodes["dep:pypi:django"]["attrs"] == {
        "declared": True, "direct": True, "ecosystem": "pypi", "in_repository": False, "locked": False, "name": "django",
    }


def test_a_pyproject_declares_what_its_build_and_its_tools_development_groups_need(tmp_path):
    root = write_tree(tmp_path / "m", {
        "pyproject.toml": (
            "[build-system]\nrequires = ['hatchling>=1.21', 'hatch-vcs']\nbuild-backend = 'hatchling.build'\n\n"
            "[project]\nname = 'demo'\n\n"
            "[dependency-groups]\ntest = ['pytest>=8', { include-group = 'lint' }]\nlint = ['ruff']\n\n"
            "[tool.uv]\ndev-dependencies = [\n  'mypy==1.11',\n]\n\n"
            "[tool.pdm.dev-dependencies]\ndocs = ['mkdocs']\n"
        ),
    })
    result = analyse(root)
    assert dependency_edges(result, "declares") == [
        ("pyproject.toml", "dep:pypi:hatch-vcs", (("scope", "build"), ("spec", "")), 2),
        ("pyproject.toml", "dep:pypi:hatchling", (("scope", "build"), ("spec", ">=1.21")), 2),
        ("pyproject.toml", "dep:pypi:mkdocs", (("scope", "group:docs"), ("spec", "")), 18),
        ("pyproject.toml", "dep:pypi:mypy", (("scope", "dev"), ("spec", "==1.11")), 14),
        ("pyproject.toml", "dep:pypi:pytest", (("scope", "group:test"), ("spec", ">=8")), 9),
        ("pyproject.toml", "dep:pypi:ruff", (("scope", "group:lint"), ("spec", "")), 10),
    ]


def test_requirements_files_a_pyproject_builds_from_take_its_scopes(tmp_path):
    # gradio: the hatch-requirements-txt hook; setuptools' dynamic dependencies in a project below.
    root = write_tree(tmp_path / "m", {
        "pyproject.toml": (
            "[project]\nname = 'app'\ndynamic = ['dependencies', 'optional-dependencies']\n\n"
            "[tool.hatch.metadata.hooks.requirements_txt]\nfilename = 'requirements.txt'\n\n"
            "[tool.hatch.metadata.hooks.requirements_txt.optional-dependencies]\noauth = ['requirements-oauth.txt']\n"
        ),
        "requirements.txt": "httpx\n",
        "requirements-oauth.txt": "authlib\n",
        "requirements-dev.txt": "pytest\n",  # named by no pyproject: its name gives the scope, as before
        "client/pyproject.toml": (
            "[project]\nname = 'client'\ndynamic = ['dependencies']\n\n[tool.setuptools.dynamic]\n"
            "dependencies = {file = ['requirements-base.txt']}\noptional-dependencies.test = {file = 'requirements-test.txt'}\n"
        ),
        "client/requirements-base.txt": "requests\n",
        "client/requirements-test.txt": "responses\n",
    })
    result = analyse(root)
    assert [(path, dependency, attrs) for path, dependency, attrs, _line in dependency_edges(result, "declares")] == [
        ("client/requirements-base.txt", "dep:pypi:requests", (("scope", "main"), ("spec", ""))),
        ("client/requirements-test.txt", "dep:pypi:responses", (("scope", "optional:test"), ("spec", ""))),
        ("requirements-dev.txt", "dep:pypi:pytest", (("scope", "dev"), ("spec", ""))),
        ("requirements-oauth.txt", "dep:pypi:authlib", (("scope", "optional:oauth"), ("spec", ""))),
        ("requirements.txt", "dep:pypi:httpx", (("scope", "main"), ("spec", ""))),
    ]


def test_python_lockfiles_lock_versions_direct_or_transitive(tmp_path):
    root = write_tree(tmp_path / "m", {
        "pyproject.toml": "[project]\nname = 'demo'\ndependencies = ['requests']\n",
        "poetry.lock": "[[package]]\nname = 'requests'\nversion = '2.32.3'\n\n[[package]]\nname = 'urllib3'\nversion = '2.2.1'\n",
        "Pipfile.lock": json.dumps({"default": {"certifi": {"version": "==2024.2.2"}}, "develop": {"pytest": {"version": "==8.0.0"}}}, indent=2),
        "uv.lock": (
            "version = 1\n[[package]]\nname = 'demo'\nversion = '0.1.0'\nsource = { editable = '.' }\n"
            "dependencies = [{ name = 'idna' }]\n\n[[package]]\nname = 'idna'\nversion = '3.7'\n\n"
            "[[package]]\nname = 'sniffio'\nversion = '1.3.1'\n"
        ),
    })
    result = analyse(root)
    assert dependency_edges(result, "locks") == [
        ("Pipfile.lock", "dep:pypi:certifi", (("version", "2024.2.2"),), 3),
        ("Pipfile.lock", "dep:pypi:pytest", (("version", "8.0.0"),), 8),
        ("poetry.lock", "dep:pypi:requests", (("version", "2.32.3"),), 2),
        ("poetry.lock", "dep:pypi:urllib3", (("version", "2.2.1"),), 6),
        ("uv.lock", "dep:pypi:idna", (("version", "3.7"),), 9),
        ("uv.lock", "dep:pypi:sniffio", (("version", "1.3.1"),), 13),
    ]
    direct = {node_id: node["attrs"]["direct"] for node_id, node in result.of_kind("dependency").items()}
    assert direct == {
        "dep:pypi:certifi": False, "dep:pypi:idna": True, "dep:pypi:pytest": False, "dep:pypi:requests": True,
        "dep:pypi:sniffio": False, "dep:pypi:urllib3": False,
    }



def test_a_lockfiles_package_from_a_local_folder_is_not_locked(tmp_path):
    # A path dependency on the repository's own library, as poetry and uv write it; a git or wheel-file source
    # still pins a version of somebody else's package.
    root = write_tree(tmp_path / "m", {
        "app/poetry.lock": (
            "[[package]]\nname = 'acme-common'\nversion = '0.3.0'\ndevelop = true\n\n"
            "[package.source]\ntype = 'directory'\nurl = '../libs/common'\n\n"
            "[[package]]\nname = 'flask'\nversion = '3.0.0'\n\n[package.source]\ntype = 'git'\n"
            "url = 'https://github.com/pallets/flask.git'\nreference = 'main'\nresolved_reference = 'abc123'\n"
        ),
        "uv.lock": (
            "version = 1\n[[package]]\nname = 'svc'\nversion = '0.1.0'\nsource = { virtual = '.' }\n"
            "dependencies = [{ name = 'acme-common' }, { name = 'vendored' }]\n\n"
            "[[package]]\nname = 'acme-common'\nversion = '0.3.0'\nsource = { directory = 'libs/common' }\n\n"
            "[[package]]\nname = 'vendored'\nversion = '1.0'\nsource = { path = 'wheels/vendored-1.0-py3-none-any.whl' }\n"
        ),
    })
    result = analyse(root)
    assert dependency_edges(result, "locks") == [
        ("app/poetry.lock", "dep:pypi:flask", (("version", "3.0.0"),), 11),
        ("uv.lock", "dep:pypi:vendored", (("version", "1.0"),), 14),
    ]

def test_npm_manifests_and_lockfiles(tmp_path):
    package_lock = {
        "lockfileVersion": 3,
        "packages": {
            "": {"dependencies": {"lodash": "^4.17.0"}},
            "node_modules/lodash": {"version": "4.17.21"},
            "node_modules/debug": {"version": "4.3.4"},
            "node_modules/debug/node_modules/ms": {"version": "2.1.2"},
        },
    }
    root = write_tree(tmp_path / "web", {
        "package.json": json.dumps({"name": "web", "dependencies": {"lodash": "^4.17.0"}, "devDependencies": {"@types/node": "^20"}}, indent=2),
        "package-lock.json": json.dumps(package_lock, indent=2),
        "yarn.lock": '# yarn lockfile v1\n\n"@babel/core@^7.0.0", "@babel/core@^7.1.0":\n  version "7.24.0"\n  resolved "x"\n\nleft-pad@^1.3.0:\n  version "1.3.0"\n',
        "pnpm-lock.yaml": (
            "lockfileVersion: '9.0'\nimporters:\n  .:\n    dependencies:\n      react:\n        specifier: ^18\n        version: 18.3.1\n"
            "packages:\n  react@18.3.1:\n    resolution: {integrity: x}\n  loose-envify@1.4.0:\n    resolution: {integrity: y}\n"
        ),
    })
    result = analyse(root)
    assert dependency_edges(result, "declares") == [
        ("package.json", "dep:npm:@types/node", (("scope", "dev"), ("spec", "^20")), 7),
        ("package.json", "dep:npm:lodash", (("scope", "main"), ("spec", "^4.17.0")), 4),
    ]
    assert dependency_edges(result, "locks") == [
        ("package-lock.json", "dep:npm:debug", (("version", "4.3.4"),), 12),
        ("package-lock.json", "dep:npm:lodash", (("version", "4.17.21"),), 9),
        ("package-lock.json", "dep:npm:ms", (("version", "2.1.2"),), 15),
        ("pnpm-lock.yaml", "dep:npm:loose-envify", (("version", "1.4.0"),), 11),
        ("pnpm-lock.yaml", "dep:npm:react", (("version", "18.3.1"),), 9),
        ("yarn.lock", "dep:npm:@babel/core", (("version", "7.24.0"),), 3),
        ("yarn.lock", "dep:npm:left-pad", (("version", "1.3.0"),), 7),
    ]
    direct = {node_id: node["attrs"]["direct"] for node_id, node in result.of_kind("dependency").items()}
    assert direct["dep:npm:lodash"] and direct["dep:npm:react"] and direct["dep:npm:@types/node"]
    assert not direct["dep:npm:debug"] and not direct["dep:npm:ms"] and not direct["dep:npm:loose-envify"]
    assert result.summary["dependencies"]["npm"] == {"direct": 3, "locked": 7, "total": 8, "transitive": 5}


def test_a_malformed_manifest_is_a_diagnostic(tmp_path):
    root = write_tree(tmp_path / "m", {"package.json": '{\n  "dependencies": {\n    "a": \n}\n', "pyproject.toml": "[project\n"})
    result = analyse(root)
    assert result.nodes["diag:parse-error:package.json"]["evidence"][0]["lines"] == [4, 4]
    assert result.nodes["diag:parse-error:pyproject.toml"]["evidence"][0]["lines"] == [1, 1]


# -- infrastructure as code --------------------------------------------------------------------------------


def test_a_compose_service_is_built_from_the_dockerfile_its_build_names(tmp_path):
    root = write_tree(tmp_path / "app", {
        "deploy/compose.yaml": (
            "services:\n  api:\n    build: ../api\n  worker:\n    build:\n      context: ..\n      dockerfile: docker/Dockerfile.worker\n"
            "  inline:\n    build:\n      context: .\n      dockerfile_inline: |\n        FROM alpine\n"
            "  elsewhere:\n    build: https://github.com/acme/tool.git\n  db:\n    image: postgres:16\n"
        ),
        "api/Dockerfile": "FROM python:3.12-slim\n",
        "docker/Dockerfile.worker": "FROM python:3.12-slim AS base\n",
    })
    result = analyse(root)
    built = {edge["src"]: edge["dst"] for edge in result.edges if edge["kind"] == "built_from"}
    assert built == {"compose:deploy/compose.yaml#api": "file:api/Dockerfile", "compose:deploy/compose.yaml#worker": "file:docker/Dockerfile.worker"}
    assert result.nodes["compose:deploy/compose.yaml#worker"]["attrs"] == {"build": "..", "name": "worker"}
    assert result.targets("file:api/Dockerfile", "uses_image") == ["img:python:3.12-slim"]


def test_dockerfile_compose_and_terraform(tmp_path):
    root = write_tree(tmp_path / "infra", {
        "Dockerfile": "ARG V=3.12\nFROM python:${V}-slim AS build\nRUN pip install x \\\n  y\nFROM build\nFROM gcr.io/distroless/python3 AS run\n",
        "docker/Dockerfile.worker": "FROM scratch\n",
        "docker-compose.yml": "services:\n  web:\n    build: .\n    ports: ['80:80']\n  db:\n    image: postgres:16\n",
        "infra/main.tf": (
            'provider "aws" {\n  region = "eu-west-1"\n}\n\nresource "aws_s3_bucket" "logs" {\n  bucket = "logs"\n}\n\n'
            'module "vpc" {\n  source = "./modules/vpc"\n}\n\ndata "aws_ami" "ubuntu" {}\n'
        ),
    })
    result = analyse(root)
    assert result.targets("file:Dockerfile", "uses_image") == ["img:gcr.io/distroless/python3", "img:python:3.12-slim"]
    assert result.targets("file:docker/Dockerfile.worker", "uses_image") == []
    web, db = result.nodes["compose:docker-compose.yml#web"], result.nodes["compose:docker-compose.yml#db"]
    assert (web["attrs"], evidence(web)) == ({"build": ".", "name": "web"}, [("docker-compose.yml", [2, 4], "compose")])
    assert result.targets("compose:docker-compose.yml#db", "uses_image") == ["img:postgres:16"]
    assert evidence(db) == [("docker-compose.yml", [5, 6], "compose")]
    assert result.targets("compose:docker-compose.yml#web", "built_from") == ["file:Dockerfile"]
    terraform = {node_id: (node["kind"], node["attrs"], node["evidence"][0]["lines"]) for node_id, node in result.nodes.items() if node_id.startswith("tf:")}
    assert terraform == {
        "tf:infra:provider.aws": ("terraform_provider", {"name": "", "source": "", "type": "aws"}, [1, 3]),
        "tf:infra:resource.aws_s3_bucket.logs": ("terraform_resource", {"name": "logs", "source": "", "type": "aws_s3_bucket"}, [5, 7]),
        "tf:infra:module.vpc": ("terraform_module", {"name": "", "source": "./modules/vpc", "type": "vpc"}, [9, 11]),
        "tf:infra:data.aws_ami.ubuntu": ("terraform_data", {"name": "ubuntu", "source": "", "type": "aws_ami"}, [13, 13]),
    }
    assert result.summary["iac"] == {
        "compose_services": 2, "images": ["gcr.io/distroless/python3", "postgres:16", "python:3.12-slim"], "terraform": 4,
    }
