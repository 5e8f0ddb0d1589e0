"""
A synthetic monorepo of N files, the same tree for the same (N, seed): the scale benchmark's input.

It has the shapes real repositories have, in about the shares a large one does: Python services with a
``src/`` package, tests and a ``conftest.py`` each; namespace packages (a ``libs/<org>/`` directory with no
``__init__.py`` above regular packages); JS/TS workspace packages with a ``package.json`` and an ``index.ts``
each; requirements, pyproject and package-lock manifests; Dockerfiles; a few Terraform modules; and
documentation that is listed but not parsed. Files import their neighbours, the workspace's other packages and
declared third-party dependencies, so linking has edges to resolve. Sizes are 1-8 KB, log-uniform.

Every file's (and directory's) times are set an hour back, as in a checkout at rest: a re-analysis then reads
only what changed, never a file inside the racy window in which a stat stamp cannot be trusted.
"""

import json
import math
import os
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

MIN_BYTES, MAX_BYTES = 1024, 8 * 1024
AT_REST_SECONDS = 3600
ORG = "acme"
PY_DEPENDENCIES = ("requests", "django", "pydantic", "sqlalchemy", "celery", "boto3", "numpy", "attrs", "click", "httpx")
JS_DEPENDENCIES = ("react", "lodash", "axios", "zod", "express", "dayjs", "classnames", "rxjs")

# Files per unit: a Python service, a namespace library, a workspace package, a Terraform module.
SERVICE_MODULES, SERVICE_TESTS = 24, 6
LIBRARY_PACKAGES, LIBRARY_MODULES = 3, 8
WORKSPACE_SOURCES, WORKSPACE_TESTS = 18, 4
TERRAFORM_FILES = ("main.tf", "variables.tf", "outputs.tf")


@dataclass
class Tree:
    """What was written: every file's relative path, in the order written."""

    root: Path
    paths: list[str] = field(default_factory=list)

    def names(self) -> Counter:
        """How many files carry each base name."""
        return Counter(path.rsplit("/", 1)[-1] for path in self.paths)


class _Writer:
    """Writes files under ``root`` until ``limit`` of them exist, padding each to its drawn size."""

    def __init__(self, root: Path, limit: int, rng: random.Random):
        self.tree, self.limit, self.rng = Tree(root), limit, rng

    @property
    def full(self) -> bool:
        return len(self.tree.paths) >= self.limit

    def size(self) -> int:
        return int(math.exp(self.rng.uniform(math.log(MIN_BYTES), math.log(MAX_BYTES))))

    def write(self, relative: str, head: str, filler=None, *, tail: str = "") -> None:
        """Write ``head``, then blocks from ``filler(i)`` until the file reaches its drawn size, then ``tail``."""
        if self.full:
            return
        text, target, index = head, self.size(), 0
        while filler is not None and len(text) + len(tail) < target:
            text += filler(index)
            index += 1
        path = self.tree.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + tail)
        self.tree.paths.append(relative)


def _python_block(module: str, index: int) -> str:
    if index % 3 == 2:
        return (
            f"\n\nclass {module.title().replace('_', '')}Handler{index}:\n"
            f'    """Handle the {module} records of kind {index}."""\n\n'
            f"    def __init__(self, store, limit={index * 7 % 97 + 1}):\n"
            "        self.store = store\n        self.limit = limit\n\n"
            "    def run(self, items):\n"
            "        done = []\n        for item in items[: self.limit]:\n"
            f"            if item.get('kind') == {index}:\n                done.append(self.store.save(item))\n"
            "        return done\n"
        )
    return (
        f"\n\ndef {module}_step_{index}(values, *, scale={index % 5 + 1}):\n"
        f'    """Scale and filter the values of step {index}."""\n'
        "    result = []\n    for value in values:\n"
        f"        if value % {index % 7 + 2}:\n            result.append(value * scale)\n"
        "    return result\n"
    )


def _python_module(package: str, module: str, siblings: list[str], rng: random.Random, dependencies) -> str:
    imports = [f"import {rng.choice(dependencies)}", "import logging", "import os"]
    imports += [f"from {package} import {sibling}" for sibling in rng.sample(siblings, min(2, len(siblings))) if sibling != module]
    return f'"""The {module} part of {package}."""\n\n' + "\n".join(imports) + "\n\nlog = logging.getLogger(__name__)\n"


def _ts_block(name: str, index: int, tsx: bool) -> str:
    if tsx and index % 2:
        return (
            f"\n\nexport function {name.title()}Row{index}(props: {{ label: string; count: number }}) {{\n"
            f"  return <li className=\"row-{index}\">{{props.label}}: {{props.count}}</li>;\n}}\n"
        )
    return (
        f"\n\nexport interface {name.title()}Item{index} {{\n  id: string;\n  weight: number;\n}}\n\n"
        f"export function pick{name.title()}{index}(items: {name.title()}Item{index}[], floor = {index % 9}): string[] {{\n"
        "  return items.filter((item) => item.weight > floor).map((item) => item.id);\n}\n"
    )


def _js_block(name: str, index: int) -> str:
    return (
        f"\n\nfunction {name}Step{index}(items) {{\n  return items.filter((x) => x > {index}).map((x) => x * 2);\n}}\n"
        f"module.exports.{name}Step{index} = {name}Step{index};\n"
    )


def _service(w: _Writer, number: int) -> None:
    rng, base = w.rng, f"services/svc{number:03d}"
    package = f"svc{number:03d}"
    deps = rng.sample(PY_DEPENDENCIES, 4)
    if number % 2:
        w.write(f"{base}/requirements.txt", "".join(f"{d}>={rng.randint(1, 5)}.{rng.randint(0, 9)}\n" for d in deps))
    else:
        w.write(f"{base}/pyproject.toml", f'[project]\nname = "{package}"\nversion = "1.{number}.0"\n'
                f"dependencies = [{', '.join(repr(d) for d in deps)}]\n\n[build-system]\nrequires = [\"setuptools\"]\n")
    w.write(f"{base}/Dockerfile", f"FROM python:3.12-slim\nWORKDIR /app\nCOPY . /app\nRUN pip install .\n"
            f'EXPOSE {8000 + number}\nCMD ["python", "-m", "{package}"]\n')
    modules = [f"mod_{i:02d}" for i in range(SERVICE_MODULES)]
    w.write(f"{base}/src/{package}/__init__.py", f'"""The {package} service."""\n\nfrom {package} import {modules[0]}\n')
    for module in modules:
        w.write(f"{base}/src/{package}/{module}.py", _python_module(package, module, modules, rng, deps),
                lambda i, m=module: _python_block(m, i))
    w.write(f"{base}/tests/__init__.py", "")
    w.write(f"{base}/tests/conftest.py", "import pytest\n", lambda i: f"\n\n@pytest.fixture\ndef fixture_{i}():\n    return {{'id': {i}}}\n")
    for i in range(SERVICE_TESTS):
        module = modules[i]
        w.write(f"{base}/tests/test_{module}.py", f"from {package} import {module}\n",
                lambda j, m=module: f"\n\ndef test_{m}_step_{j}():\n    assert {m}.{m}_step_0([1, 2, 3]) is not None\n")


def _library(w: _Writer, number: int) -> None:
    """A namespace package: ``libs/acme/`` has no ``__init__.py``; the packages inside it do."""
    rng = w.rng
    for p in range(LIBRARY_PACKAGES):
        package = f"lib{number:03d}_{p}"
        base = f"libs/{ORG}/{package}"
        modules = [f"part_{i}" for i in range(LIBRARY_MODULES)]
        w.write(f"{base}/__init__.py", "")
        for module in modules:
            w.write(f"{base}/{module}.py", _python_module(f"{ORG}.{package}", module, modules, rng, PY_DEPENDENCIES),
                    lambda i, m=module: _python_block(m, i))
        w.write(f"{base}/conftest.py", "import pytest\n", lambda i: f"\n\n@pytest.fixture\ndef {package}_{i}():\n    return {i}\n")


def _workspace_package(w: _Writer, number: int, packages: int) -> None:
    rng, name = w.rng, f"pkg{number:03d}"
    base = f"packages/{name}"
    peers = [f"@{ORG}/pkg{rng.randrange(packages):03d}" for _ in range(2)]
    deps = {d: f"^{rng.randint(1, 9)}.{rng.randint(0, 20)}.0" for d in rng.sample(JS_DEPENDENCIES, 3)}
    deps.update({peer: "workspace:*" for peer in peers if peer != f"@{ORG}/{name}"})
    manifest = {"name": f"@{ORG}/{name}", "version": f"0.{number}.0", "main": "src/index.ts", "dependencies": deps}
    w.write(f"{base}/package.json", json.dumps(manifest, indent=2) + "\n")
    sources = [f"part{i:02d}" for i in range(WORKSPACE_SOURCES)]
    w.write(f"{base}/src/index.ts", "".join(f'export * from "./{s}";\n' for s in sources[:6]))
    for i, source in enumerate(sources):
        tsx, js = i % 4 == 3, i % 6 == 5
        dependency, sibling = rng.choice(list(deps)), rng.choice(sources)
        if js:
            head = f'const {{ use{i} }} = require("{dependency}");\nconst {{ helper }} = require("./{sibling}");\n'
            w.write(f"{base}/src/{source}.js", head, lambda j, s=source: _js_block(s, j))
        else:
            head = f'import {{ use{i} }} from "{dependency}";\nimport {{ helper }} from "./{sibling}";\n'
            w.write(f"{base}/src/{source}{'.tsx' if tsx else '.ts'}", head, lambda j, s=source, t=tsx: _ts_block(s, j, t))
    w.write(f"{base}/src/components/index.ts", "".join(f'export * from "../{s}";\n' for s in sources[6:10]))
    for i in range(WORKSPACE_TESTS):
        w.write(f"{base}/test/{sources[i]}.test.ts", f'import {{ pick{sources[i].title()}0 }} from "../src/{sources[i]}";\n',
                lambda j, s=sources[i]: f'\n\ntest("{s} case {j}", () => {{\n  expect(pick{s.title()}0([], {j})).toEqual([]);\n}});\n')


def _terraform(w: _Writer, number: int) -> None:
    base = f"infra/terraform/module{number:02d}"
    for name in TERRAFORM_FILES:
        w.write(f"{base}/{name}", f'terraform {{\n  required_version = ">= 1.5"\n}}\n',
                lambda i: f'\n\nvariable "setting_{number}_{i}" {{\n  type    = string\n  default = "value-{i}"\n}}\n\n'
                f'resource "aws_s3_bucket" "bucket_{number}_{i}" {{\n  bucket = "acme-{number}-{i}"\n  tags = {{ team = "t{i % 5}" }}\n}}\n')


def _docs(w: _Writer, number: int) -> None:
    w.write(f"docs/guide/chapter{number:04d}.md", f"# Chapter {number}\n", lambda i: f"\nParagraph {i} of chapter {number}: how the services fit.\n" * 3)


def _root_files(w: _Writer, packages: int) -> None:
    workspace = {"name": f"@{ORG}/monorepo", "private": True, "workspaces": ["packages/*"]}
    w.write("package.json", json.dumps(workspace, indent=2) + "\n")
    lock = {"name": f"@{ORG}/monorepo", "lockfileVersion": 3, "requires": True, "packages": {
        f"node_modules/{d}": {"version": f"{i + 1}.0.0", "resolved": f"https://registry.npmjs.org/{d}/-/{d}-{i + 1}.0.0.tgz"}
        for i, d in enumerate(JS_DEPENDENCIES)}}
    lock["packages"].update({f"packages/pkg{p:03d}": {"name": f"@{ORG}/pkg{p:03d}", "version": f"0.{p}.0"} for p in range(packages)})
    w.write("package-lock.json", json.dumps(lock, indent=2) + "\n")
    w.write("requirements.txt", "".join(f"{d}=={i + 1}.0\n" for i, d in enumerate(PY_DEPENDENCIES)))
    w.write("pyproject.toml", '[tool.pytest.ini_options]\ntestpaths = ["services", "libs"]\n')
    w.write("Dockerfile", "FROM node:20-slim AS web\nWORKDIR /web\nCOPY packages packages\nRUN npm ci\n\n"
            "FROM python:3.12-slim\nCOPY --from=web /web /web\nCOPY services /srv\n")


def generate(root: Path, files: int, *, seed: int = 0) -> Tree:
    """Write a monorepo of exactly ``files`` files under the empty or absent ``root``; the same for the same seed."""
    rng = random.Random(seed)
    w = _Writer(Path(root), files, rng)
    # Units cycle in these proportions until the tree is full: roughly half Python, a third JS/TS, the rest
    # manifests, Dockerfiles, Terraform and docs.
    packages = max(1, files // 400)
    _root_files(w, packages)
    counters = Counter()
    cycle = ["service", "library", "package", "package", "docs", "service", "library", "package", "terraform", "docs"]
    while not w.full:
        for unit in cycle:
            number = counters[unit]
            counters[unit] += 1
            if unit == "service":
                _service(w, number)
            elif unit == "library":
                _library(w, number)
            elif unit == "package":
                _workspace_package(w, number, packages)
            elif unit == "terraform":
                _terraform(w, number)
            else:
                for i in range(10):
                    _docs(w, number * 10 + i)
    _settle(w.tree.root)
    return w.tree


def _settle(root: Path) -> None:
    """Set every file's and directory's times an hour back (directories last, after their files are done)."""
    then = time.time() - AT_REST_SECONDS
    for directory, _, filenames in os.walk(root, topdown=False):
        for name in filenames:
            os.utime(os.path.join(directory, name), (then, then))
        os.utime(directory, (then, then))
