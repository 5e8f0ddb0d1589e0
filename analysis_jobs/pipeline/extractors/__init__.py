"""
The extractors, and which one reads which file (by its name alone, so the choice is the same in every source).

An extractor maps a file's bytes to JSON-ready, path-independent facts; the pipeline caches that output by
(content sha256, extractor key) and links it into the graph. An extractor that raises on a file gives a
diagnostic instead: the analysis goes on.
"""

import json
import posixpath
import re

from .base import Extractor
from .ecosystems import (
    CARGO_LOCK, CARGO_TOML, COMPOSER_JSON, COMPOSER_LOCK, CSPROJ, GEMFILE_LOCK, GO_MOD, GO_SUM, GRADLE_CATALOG,
    NUGET_LOCK, POM, SETUP_PY,
)
from .iac import COMPOSE, DOCKERFILE, TERRAFORM
from .javascript import JAVASCRIPT, TSX, TYPESCRIPT
from .manifests import (
    INTEGRATION_MANIFEST, PACKAGE_JSON, PACKAGE_LOCK, PIPFILE, PIPFILE_LOCK, PNPM_LOCK, PNPM_WORKSPACE, POETRY_LOCK,
    PYPROJECT, REQUIREMENTS, SETUP_CFG, TSCONFIG, UV_LOCK, YARN_LOCK,
)
from .platforms import ACTION, HELM_CHART, KUBERNETES, TERRAFORM_LOCK, WORKFLOW
from .python import PYTHON

# The manifests and lockfiles: their facts are ``declared`` and ``locked`` rows, which the linker reads before
# any file is linked (what a project declares decides what its imports resolve to).
MANIFESTS = (
    REQUIREMENTS, PYPROJECT, SETUP_CFG, SETUP_PY, INTEGRATION_MANIFEST, PIPFILE, PIPFILE_LOCK, POETRY_LOCK, UV_LOCK,
    PACKAGE_JSON, PACKAGE_LOCK, YARN_LOCK, PNPM_LOCK, GO_MOD, GO_SUM, CARGO_TOML, CARGO_LOCK, POM, GRADLE_CATALOG, CSPROJ,
    NUGET_LOCK, COMPOSER_JSON, COMPOSER_LOCK, GEMFILE_LOCK,
)
# What declares or locks dependencies besides the manifests: a Helm chart's charts, Terraform's providers.
DECLARING = (*MANIFESTS, HELM_CHART, TERRAFORM, TERRAFORM_LOCK)
ALL = (
    PYTHON, JAVASCRIPT, TYPESCRIPT, TSX, TSCONFIG, *MANIFESTS, PNPM_WORKSPACE, DOCKERFILE, COMPOSE, TERRAFORM, TERRAFORM_LOCK,
    WORKFLOW, ACTION, KUBERNETES, HELM_CHART,
)
BY_KEY = {extractor.key: extractor for extractor in ALL}

BY_NAME = {
    "pyproject.toml": PYPROJECT,
    "setup.cfg": SETUP_CFG,
    "manifest.json": INTEGRATION_MANIFEST,  # a Home Assistant integration's requirements
    "Pipfile": PIPFILE,
    "Pipfile.lock": PIPFILE_LOCK,
    "poetry.lock": POETRY_LOCK,
    "uv.lock": UV_LOCK,
    "package.json": PACKAGE_JSON,
    "package-lock.json": PACKAGE_LOCK,
    "npm-shrinkwrap.json": PACKAGE_LOCK,
    "yarn.lock": YARN_LOCK,
    "pnpm-lock.yaml": PNPM_LOCK,
    "pnpm-workspace.yaml": PNPM_WORKSPACE,  # its catalogs: what a "catalog:" spec stands for
    "setup.py": SETUP_PY,
    "go.mod": GO_MOD,
    "go.sum": GO_SUM,
    "Cargo.toml": CARGO_TOML,
    "Cargo.lock": CARGO_LOCK,
    "pom.xml": POM,
    "libs.versions.toml": GRADLE_CATALOG,
    "packages.lock.json": NUGET_LOCK,
    "Directory.Packages.props": CSPROJ,  # the central package versions of the projects below it
    "Directory.Build.props": CSPROJ,  # the package references every project below it gets
    "composer.json": COMPOSER_JSON,
    "composer.lock": COMPOSER_LOCK,
    "Gemfile.lock": GEMFILE_LOCK,
    "tsconfig.json": TSCONFIG,
    "jsconfig.json": TSCONFIG,
    "Chart.yaml": HELM_CHART,
    "action.yml": ACTION,  # a GitHub action of the repository's own (``uses: ./.github/actions/setup``)
    "action.yaml": ACTION,
    ".terraform.lock.hcl": TERRAFORM_LOCK,
    "Dockerfile": DOCKERFILE,
    "Containerfile": DOCKERFILE,
}
BY_SUFFIX = {
    ".py": PYTHON,
    ".pyi": PYTHON,
    ".js": JAVASCRIPT,
    ".mjs": JAVASCRIPT,
    ".cjs": JAVASCRIPT,
    ".jsx": JAVASCRIPT,
    ".ts": TYPESCRIPT,
    ".mts": TYPESCRIPT,
    ".cts": TYPESCRIPT,
    ".tsx": TSX,
    ".tf": TERRAFORM,
    ".dockerfile": DOCKERFILE,
    ".csproj": CSPROJ,
    ".fsproj": CSPROJ,
    ".vbproj": CSPROJ,
}
_COMPOSE = re.compile(r"^(docker-)?compose([.-][\w.-]+)?\.ya?ml$")
_REQUIREMENTS = re.compile(r"^requirements.*\.(txt|in)$")
_REQUIREMENTS_SUFFIXES = (".requirements.txt", ".requirements.in", "-requirements.txt", "-requirements.in")
_MINIFIED = (".min.js", ".min.mjs", "-min.js", ".bundle.js")


def extractor_for(path: str) -> Extractor | None:
    """Return the extractor that reads the file at ``path`` (relative, ``/``-separated), or None."""
    directory, _, name = path.rpartition("/")
    if name in BY_NAME:
        return BY_NAME[name]
    if name.startswith(("Dockerfile.", "Containerfile.")):
        return DOCKERFILE
    if name.startswith("tsconfig.") and name.endswith(".json"):
        return TSCONFIG  # tsconfig.base.json, tsconfig.app.json
    # The patterns are tried only on names they could match: a re-analysis asks this of every listed file.
    if name.startswith("requirements") and _REQUIREMENTS.match(name) or name.endswith(_REQUIREMENTS_SUFFIXES) or (
        name.endswith((".txt", ".in")) and "requirements" in directory and "requirements" in directory.split("/")
    ):  # requirements/base.in, and celery's requirements/extras/redis.txt
        return REQUIREMENTS
    if name.startswith(("compose", "docker-compose")) and _COMPOSE.match(name):
        return COMPOSE
    if name.endswith(_MINIFIED):
        return None  # generated: listed in the inventory, not parsed
    suffix = posixpath.splitext(name)[1]
    if suffix in (".yml", ".yaml"):
        return WORKFLOW if directory == ".github/workflows" else KUBERNETES  # GitHub reads workflows from there only
    return BY_SUFFIX.get(suffix)


def run_extractor(extractor: Extractor, data: bytes) -> dict:
    """Run ``extractor`` on ``data``; a failure becomes ``{"error": [message, line]}``, never an exception."""
    try:
        return extractor.extract(data)
    except RecursionError:
        return {"error": ["too deeply nested to parse", 1]}
    except Exception as error:  # a malformed manifest is a fact about the file, not a failed job
        return {"error": [_message(error), _line(error)]}


def _message(error: Exception) -> str:
    text = f"{error.__class__.__name__}: {getattr(error, 'msg', None) or getattr(error, 'problem', None) or error}"
    return text.splitlines()[0][:200]


def _line(error: Exception) -> int:
    if isinstance(error, json.JSONDecodeError):
        return error.lineno
    mark = getattr(error, "problem_mark", None)
    if mark is not None:
        return mark.line + 1
    found = re.search(r"line (\d+)", str(error))
    return int(found.group(1)) if found else 1


INVENTORY_VERSION = "1"  # the file and repository facts the pipeline itself records


def extractor_versions() -> dict[str, str]:
    """Return every extractor's name and version (part of a snapshot's identity and document)."""
    return {"inventory": INVENTORY_VERSION, **{extractor.name: extractor.version for extractor in ALL}}
