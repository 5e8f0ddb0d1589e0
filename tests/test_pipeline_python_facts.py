"""Python facts on the shapes real repositories have: from-imports of submodules, namespace packages, stubs,
same-named files, newer syntax, import names that differ from their distributions, and how a module is imported."""

import pytest

from analysis_jobs.pipeline.extractors.python import extract_python
from tests.pipeline_support import analyse, write_tree


def imports_edge(result, src, dst):
    return next(edge for edge in result.edges_from(src, "imports") if edge["dst"] == dst)


def test_every_submodule_named_by_a_from_import_gets_its_edge(tmp_path):
    root = write_tree(tmp_path / "r", {
        "pkg/__init__.py": "VERSION = 1\n",
        "pkg/a.py": "", "pkg/b.py": "", "pkg/c.py": "",
        "one.py": "from pkg import a, b, c\n",
        "mixed.py": "from pkg import a, VERSION\n",
    })
    result = analyse(root)
    assert result.targets("mod:py:one", "imports") == ["mod:py:pkg.a", "mod:py:pkg.b", "mod:py:pkg.c"]
    # a name that is not a submodule is the package's own: the package keeps its edge beside the submodule's
    assert result.targets("mod:py:mixed", "imports") == ["mod:py:pkg", "mod:py:pkg.a"]


def test_namespace_packages_name_their_modules_and_resolve_relative_imports(tmp_path):
    root = write_tree(tmp_path / "r", {
        "pyproject.toml": "[project]\nname = 'r'\n",
        "pkg/sub/app.py": "from ..config import X\nfrom . import views\n",
        "pkg/config.py": "X = 1\n",
        "pkg/sub/views.py": "",
        "scripts/x.py": "def y():\n    pass\n",
        "scripts/run.py": "from scripts.x import y\n",
    })
    result = analyse(root)
    modules = {node["attrs"]["name"] for node in result.of_kind("module").values()}
    assert modules == {"pkg.sub.app", "pkg.config", "pkg.sub.views", "scripts.x", "scripts.run"}
    assert result.targets("mod:py:pkg.sub.app", "imports") == ["mod:py:pkg.config", "mod:py:pkg.sub.views"]
    assert result.targets("mod:py:scripts.run", "imports") == ["mod:py:scripts.x"]
    assert "dep:pypi:scripts" not in result.nodes


def test_an_init_stub_marks_a_package_and_stubs_are_modules(tmp_path):
    root = write_tree(tmp_path / "stubs", {
        "requests-stubs/__init__.pyi": "from .api import get as get\n",
        "requests-stubs/api.pyi": "def get(url: str) -> object: ...\n",
        "six/__init__.pyi": "", "six/moves/__init__.pyi": "", "six/moves/urllib/__init__.pyi": "",
    })
    result = analyse(root)
    names = {node["attrs"]["name"] for node in result.of_kind("module").values()}
    assert {"six", "six.moves", "six.moves.urllib"} <= names
    assert len(result.of_kind("module")) == 5  # three __init__.pyi never merge into one node


def test_files_with_the_same_base_name_stay_distinct_modules(tmp_path):
    root = write_tree(tmp_path / "r", {
        "tests/conftest.py": "import pytest\n",
        "api/tests/conftest.py": "import os\n",
        "web/tests/conftest.py": "import json\n",
    })
    result = analyse(root)
    modules = result.of_kind("module")
    assert len(modules) == 3
    assert sorted(node["evidence"][0]["path"] for node in modules.values()) == [
        "api/tests/conftest.py", "tests/conftest.py", "web/tests/conftest.py",
    ]
    assert sorted(dst for src in modules for dst in result.targets(src, "imports")) == [
        "dep:pypi:pytest", "std:py:json", "std:py:os",
    ]


NEWER_SYNTAX = (
    "import os\n"
    "type Pair[T] = tuple[T, T]\n"  # 3.12
    "class Box[T: (int, str)]:\n"  # 3.12
    "    def get[U](self, u: U) -> T | U: ...\n"
    "def first[T = int, *Ts = *tuple[int], **P = [int]](items: list[T]) -> T:\n"  # 3.13 defaults (PEP 696)
    "    return f'{items[0]!r:>{10}}'\n"  # 3.12 f-string grammar
    "match os.name:\n"
    "    case 'nt':\n"
    "        import ntpath\n"
    # Home Assistant's: a default after a bound, on a long name, spanning lines
    "class EventType[_DataT: Mapping[str, Any] = Mapping[str, Any]](str): ...\n"
    "class ConfigEntry[_DataT = Any]:\n"
    "    import json\n"
    "class SetupFlow[  # pylint: disable=enforce-class-module\n    _M: (\n        Module\n    ) = Module,\n](FlowHandler): ...\n"
    "type Alias[T = int] = list[T]  # a comment\n"
)


def test_newer_python_syntax_parses_on_any_worker(tmp_path):
    facts = extract_python(NEWER_SYNTAX.encode())
    assert "error" not in facts
    assert [(row[0], row[3]) for row in facts["imports"]] == [("os", 1), ("ntpath", 9), ("json", 12)]
    assert [(kind, name, first, last) for kind, name, first, last in facts["defs"]] == [
        ("type", "Pair", 2, 2), ("class", "Box", 3, 4), ("function", "first", 5, 6), ("class", "EventType", 10, 10),
        ("class", "ConfigEntry", 11, 12), ("class", "SetupFlow", 13, 17), ("type", "Alias", 18, 18),
    ]
    # a real error in a type parameter list still is one
    assert extract_python(b"class Bad[T = ]:\n    pass\n")["error"][1] == 1
    assert extract_python(b"def bad[T: = int](): ...\n")["error"][1] == 1


def test_a_starred_item_of_an_unparenthesised_tuple_parses():
    # gradio's chat_interface.py: yield None, history, *[skip() for _ in self.additional_outputs]
    source = (
        "import os\n"
        "def respond(history, outputs):\n"
        "    yield None, history, *[skip() for _ in outputs]\n"
        "    return history, *(outputs or ())\n"
        "pair = *[1], 2\n"
        "for item in 1, *{2}:\n"
        "    import json\n"
        "product = 2 *[3]\n"
    )
    facts = extract_python(source.encode())
    assert "error" not in facts
    assert [(row[0], row[3]) for row in facts["imports"]] == [("os", 1), ("json", 7)]
    assert extract_python((source + "broken = (\n").encode())["error"][1] == 9  # a real error still is one


def test_the_graph_does_not_depend_on_the_interpreter(tmp_path, monkeypatch):
    import sys

    from analysis_jobs.pipeline.extractors import python

    root = write_tree(tmp_path / "r", {"m.py": NEWER_SYNTAX})
    here = analyse(root)
    monkeypatch.setattr(sys, "version_info", (3, 14, 0, "final", 0))
    monkeypatch.setattr(sys, "version", "3.14.0")
    assert analyse(root).hash == here.hash
    assert python.VERSION.isdigit()  # the extractor's own version, with no interpreter's in it
    assert here.nodes["mod:py:m"]["evidence"][0]["extractor"] == f"python@{python.VERSION}"


@pytest.mark.parametrize(("imported", "declared"), [
    ("taggit", "django-taggit"), ("mptt", "django-mptt"), ("storages", "django-storages"),
    ("graphql", "graphql-core"), ("yaml", "PyYAML"), ("jose", "python-jose"), ("dateutil", "python-dateutil"),
    # pretix's: a lighter build, a fork, a hyphen the import name lacks, a name of its own
    ("phonenumbers", "phonenumberslite"), ("vat_moss", "vat_moss_forked"), ("mt940", "mt-940"), ("sass", "libsass"),
    ("oauth2_provider", "django-oauth-toolkit"), ("cv2", "opencv-python-headless"),
    # dagster's
    ("upath", "universal_pathlib"), ("antlr4", "antlr4-python3-runtime"), ("grpc_health.v1", "grpcio-health-checking"),
    # superset's: an Apache project's distribution
    ("superset_core", "apache-superset-core"),
    # nova's, label-studio's and plone.api's
    ("openstack", "openstacksdk"), ("rest_framework_simplejwt", "djangorestframework-simplejwt"),
    ("Products.CMFCore.utils", "Products.CMFCore"), ("OFS.SimpleItem", "Zope"),
])
def test_an_import_name_maps_to_its_declared_distribution(tmp_path, imported, declared):
    root = write_tree(tmp_path / "r", {"requirements.txt": f"{declared}==1.0\n", "app.py": f"import {imported}\n"})
    result = analyse(root)
    deps = result.of_kind("dependency")
    assert len(deps) == 1, deps
    (dep,) = deps.values()
    assert dep["attrs"]["declared"] is True
    assert result.targets("mod:py:app", "imports") == list(deps)


def test_a_dotted_import_maps_to_the_declared_distribution_its_longest_prefix_names(tmp_path):
    # kombu's shape: azure.* namespace distributions, declared one per extra.
    root = write_tree(tmp_path / "r", {
        "requirements/extras/azure.txt": "azure-storage-queue>=12.6.0\nazure-identity>=1.12.0\n",
        "requirements/default.txt": "Django>=4\n",
        "app.py": (
            "from azure.storage.queue import QueueServiceClient\nfrom azure.identity import DefaultAzureCredential\n"
            "import azure.core.exceptions\nfrom django.contrib import admin\n"
        ),
    })
    result = analyse(root)
    assert result.targets("mod:py:app", "imports") == [
        "dep:pypi:azure-core", "dep:pypi:azure-identity", "dep:pypi:azure-storage-queue", "dep:pypi:django"]
    assert result.nodes["dep:pypi:azure-storage-queue"]["attrs"]["declared"] is True
    assert result.nodes["dep:pypi:azure-core"]["attrs"]["declared"] is False  # it comes with them, undeclared


@pytest.mark.parametrize(("imported", "distribution"), [
    ("socks", "pysocks"), ("railroad", "railroad-diagrams"), ("PIL.Image", "pillow"), ("google.protobuf", "protobuf"),
    ("zope.interface", "zope-interface"), ("backports.zoneinfo", "backports-zoneinfo"), ("win32con", "pywin32"),
    ("bson", "pymongo"), ("google.genai.types", "google-genai"), ("google.cloud.storage", "google-cloud-storage"),
    ("google.oauth2.credentials", "google-auth"), ("azure.mgmt.compute", "azure-mgmt-compute"),
    ("opentelemetry.trace", "opentelemetry-api"), ("opentelemetry.sdk.trace.export", "opentelemetry-sdk"),
    ("opentelemetry.instrumentation.django", "opentelemetry-instrumentation-django"), ("cog", "cogapp"),
    ("xdist.plugin", "pytest-xdist"), ("markdown_it", "markdown-it-py"), ("factory.django", "factory-boy"),
    ("oauth2_provider.models", "django-oauth-toolkit"), ("sass", "libsass"), ("phonenumbers", "phonenumbers"),
])
def test_an_undeclared_import_name_maps_to_its_known_distribution(tmp_path, imported, distribution):
    # pip's vendored urllib3 imports socks, and pyparsing railroad, where nothing declares them; pytest imports zope.interface.
    result = analyse(write_tree(tmp_path / "r", {"app.py": f"import {imported}\n"}))
    assert result.targets("mod:py:app", "imports") == [f"dep:pypi:{distribution}"]
    assert result.nodes[f"dep:pypi:{distribution}"]["attrs"]["declared"] is False


def test_names_imported_from_a_namespace_package_are_the_distributions_modules(tmp_path):
    # sentry-sdk's shapes: from google import genai; from opentelemetry import trace; from google.cloud import storage.
    result = analyse(write_tree(tmp_path / "r", {"app.py": (
        "from google import genai\nfrom opentelemetry import trace, context\n"
        "from google.cloud import storage, pubsub\nfrom zope import interface\nfrom requests import Session\n"
        "from Products import PrintingMailHost\nfrom Products.DCWorkflow.DCWorkflow import Definition\n"  # Zope's
    )}))
    assert result.targets("mod:py:app", "imports") == [
        "dep:pypi:google-cloud-pubsub", "dep:pypi:google-cloud-storage", "dep:pypi:google-genai",
        "dep:pypi:opentelemetry-api", "dep:pypi:products-dcworkflow", "dep:pypi:products-printingmailhost",
        "dep:pypi:requests", "dep:pypi:zope-interface",
    ]


def test_the_lockfile_names_the_distribution_of_a_transitive_import(tmp_path):
    root = write_tree(tmp_path / "r", {
        "requirements.txt": "flask==3.0\n",
        "poetry.lock": (
            '[[package]]\nname = "flask"\nversion = "3.0.0"\n\n'
            '[[package]]\nname = "itsdangerous"\nversion = "2.1.2"\n\n'
            '[[package]]\nname = "markupsafe"\nversion = "2.1.3"\n'
        ),
        "app.py": "import markupsafe\nimport itsdangerous\n",
    })
    result = analyse(root)
    assert result.targets("mod:py:app", "imports") == ["dep:pypi:itsdangerous", "dep:pypi:markupsafe"]
    assert result.nodes["dep:pypi:markupsafe"]["attrs"]["locked"] is True


def test_no_dependency_is_invented_for_the_standard_library_stubs_or_the_repository(tmp_path):
    root = write_tree(tmp_path / "r", {
        "pkg/__init__.py": "",
        "pkg/__main__.py": (
            "import __main__\nfrom _typeshed import StrPath\nimport tomllib, zoneinfo, distutils\n"
            "import __pypy__, _dummy_thread, dummy_thread\n"  # PyPy's own module; 3.8's and Python 2's names
            "try:\n    import _winreg\nexcept ImportError:\n    import winreg as _winreg\n"  # as pygments does
            "try:\n    from _abcoll import KeysView\nexcept ImportError:\n    pass\n"  # as distlib does
        ),
        "pkg/missing.py": "from pkg.gone import thing\n",
    })
    result = analyse(root)
    assert result.of_kind("dependency") == {}
    assert result.targets("mod:py:pkg.__main__", "imports") == [
        "std:py:__main__", "std:py:__pypy__", "std:py:_abcoll", "std:py:_dummy_thread", "std:py:_typeshed",
        "std:py:_winreg", "std:py:distutils", "std:py:dummy_thread", "std:py:tomllib", "std:py:winreg",
        "std:py:zoneinfo",
    ]
    assert not any(node_id.startswith("dep:pypi:-") for node_id in result.nodes)


def test_a_private_module_belongs_to_the_distribution_of_its_public_name(tmp_path):
    # celery imports billiard's C extension as _billiard; pytest's internals are _pytest.
    root = write_tree(tmp_path / "r", {
        "requirements.txt": "billiard>=4.2\n",
        "app.py": "from _billiard import read\nimport _pytest.fixtures\nimport _cffi_backend\nimport _distutils_hack\n",
    })
    result = analyse(root)
    assert result.targets("mod:py:app", "imports") == [
        "dep:pypi:billiard", "dep:pypi:cffi", "dep:pypi:pytest", "dep:pypi:setuptools"]
    assert result.nodes["dep:pypi:billiard"]["attrs"]["declared"] is True


def test_an_import_says_how_it_is_made(tmp_path):
    root = write_tree(tmp_path / "r", {
        "app.py": (
            "from __future__ import annotations\n"
            "import importlib\n"
            "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n"
            "    import numpy\n"
            "try:\n"
            "    import ujson\n"
            "except ImportError:\n"
            "    ujson = None\n"
            "def load():\n"
            "    import pandas\n"
            "    return importlib.import_module('scipy')\n"
            "import requests\n"
        ),
    })
    result = analyse(root)
    attrs = {edge["dst"]: edge.get("attrs", {}) for edge in result.edges_from("mod:py:app", "imports")}
    assert attrs["dep:pypi:numpy"].get("type_only") is True
    assert attrs["dep:pypi:ujson"].get("optional") is True
    assert attrs["dep:pypi:pandas"].get("local") is True
    assert attrs["dep:pypi:scipy"].get("dynamic") is True
    assert not any(attrs["dep:pypi:requests"].get(kind) for kind in ("type_only", "optional", "local", "dynamic"))
    assert "std:py:__future__" in attrs


def test_a_test_that_skips_without_a_module_and_a_suppressed_import_are_optional(tmp_path):
    # The shapes of pandas' and numpy's test suites, and of a speed-up module that may be missing.
    root = write_tree(tmp_path / "r", {
        "tests/test_io.py": (
            "import contextlib\n"
            "import pytest\n"
            "from pytest import importorskip\n"
            "pa = pytest.importorskip('pyarrow')\n"
            "yaml = importorskip('yaml', minversion='6')\n"
            "with contextlib.suppress(ImportError):\n"
            "    import orjson\n"
            "with open(__file__), contextlib.suppress(ModuleNotFoundError):\n"
            "    from ujson import dumps\n"
            "with open(__file__):\n"
            "    import requests\n"
        ),
    })
    result = analyse(root)
    attrs = {edge["dst"]: edge.get("attrs", {}) for edge in result.edges_from("mod:py:tests.test_io", "imports")}
    assert attrs["dep:pypi:pyarrow"] == {"dynamic": True, "optional": True}
    assert attrs["dep:pypi:pyyaml"] == {"dynamic": True, "optional": True}
    assert attrs["dep:pypi:orjson"] == {"optional": True}
    assert attrs["dep:pypi:ujson"] == {"optional": True}
    assert attrs["dep:pypi:requests"] == {}


def test_calls_through_sessions_and_clients_become_services(tmp_path):
    root = write_tree(tmp_path / "r", {
        "app.py": (
            "import requests, httpx\n"
            "session = requests.Session()\n"
            "session.post('https://billing.example.com/charge')\n"
            "api = httpx.Client(base_url='https://api.example.com/v2')\n"
            "api.get('/users')\n"
            "httpx.Client().delete('https://cdn.example.com/purge')\n"
            "def go(self):\n"
            "    self.http_client.put('https://store.example.com/item')\n"
        ),
    })
    result = analyse(root)
    calls = {edge["dst"]: edge["attrs"] for edge in result.edges if edge["kind"] == "calls"}
    assert calls["svc:billing.example.com"]["method"] == "POST"
    assert calls["svc:api.example.com"] == {"client": "httpx", "method": "GET", "url": "https://api.example.com/v2/users"}
    assert calls["svc:cdn.example.com"]["method"] == "DELETE"
    assert calls["svc:store.example.com"]["method"] == "PUT"


def test_source_that_is_not_in_its_declared_encoding_is_a_diagnostic():
    assert extract_python(b"x = '\xff'\n")["error"][1] == 1
    assert "error" not in extract_python(b"# -*- coding: latin-1 -*-\nname = '\xe9'\n")
    assert "error" not in extract_python("name = '\u00e9'\n".encode())


def test_a_namespace_folder_named_as_a_declared_distribution_yields_to_it(tmp_path):
    # ansible's shape: a ``packaging/`` folder of release scripts beside its declared ``packaging``.
    root = write_tree(tmp_path / "r", {
        "requirements.txt": "packaging\ntools\n",
        "packaging/release.py": "from packaging.version import Version\n",
        "app/__init__.py": "from packaging.specifiers import SpecifierSet\nimport packaging.release\n",
        "tools/__init__.py": "", "tools/cli.py": "from tools.gone import x\n",
        "scripts/run.py": "from scripts.helpers import y\n",
    })
    result = analyse(root)
    assert result.targets("mod:py:packaging.release", "imports") == ["dep:pypi:packaging"]
    # the in-repository module is still found by its full name, and a regular package is the repository's own
    assert result.targets("mod:py:app", "imports") == ["dep:pypi:packaging", "mod:py:packaging.release"]
    assert result.targets("mod:py:tools.cli", "imports") == ["mod:py:tools"]
    # and an undeclared name that a namespace folder of the repository starts is still a missing module
    assert result.targets("mod:py:scripts.run", "imports") == ["mod:py:scripts.helpers"]


def test_a_package_module_run_as_a_script_imports_its_neighbour(tmp_path):
    # sympy's generated ANTLR listener: ``from autolevparser import AutolevParser`` when run as a script.
    root = write_tree(tmp_path / "r", {
        "requirements.txt": "json-parser\n",
        "pkg/__init__.py": "",
        "pkg/autolexer.py": "",
        "pkg/json_parser.py": "",
        "pkg/listener.py": (
            "if '.' in __name__:\n    from .autolexer import Lexer\nelse:\n    from autolexer import Lexer\n"
            "import json\nimport json_parser\nimport lark\n"
        ),
    })
    result = analyse(root)
    # the standard library and a declared distribution keep their names; an unknown one is still a dependency
    assert result.targets("mod:py:pkg.listener", "imports") == [
        "dep:pypi:json-parser", "dep:pypi:lark", "mod:py:pkg.autolexer", "std:py:json",
    ]


def test_a_django_project_inside_its_package_imports_its_apps_by_their_short_names(tmp_path):
    # label-studio's shape: label_studio/ is the package, and its manage.py puts label_studio/ on the path.
    root = write_tree(tmp_path / "r", {
        "pyproject.toml": "[project]\nname = 'label-studio'\n",
        "label_studio/__init__.py": "",
        "label_studio/manage.py": "import os\n",
        "label_studio/core/__init__.py": "",
        "label_studio/core/models.py": "",
        "label_studio/projects/__init__.py": "",
        "label_studio/projects/views.py": "from core.models import Base\nfrom core.gone import x\nimport label_studio.core\n",
    })
    result = analyse(root)
    assert result.targets("mod:py:label_studio.projects.views", "imports") == [
        "mod:py:label_studio.core", "mod:py:label_studio.core.models",  # core.gone: the package it is missing from
    ]
    assert not result.of_kind("dependency")


def test_python_3_15_syntax_parses_and_a_lazy_import_says_so():
    # ruff's fixtures: PEP 810's lazy imports and PEP 798's unpacking in comprehensions
    source = (
        "lazy import json\n"
        "lazy    import    os,    sys as system\n"
        "lazy from a import (  # a comment\n    b,\n)\n"
        "import re\n"
        "lazy = 1\n"  # a name, as before 3.15
        "rows = [*row for row in table]\n"
        "merged = {**d for d in dicts}\n"
        "g = 1, *'ten'\n"
        "def f():\n    lazy from pkg import mod\n"
    )
    facts = extract_python(source.encode())
    assert "error" not in facts
    assert [(row[0], row[3], row[4]) for row in facts["imports"]] == [
        ("json", 1, ["lazy"]), ("os", 2, ["lazy"]), ("sys", 2, ["lazy"]), ("a", 3, ["lazy"]), ("re", 6, []),
        ("pkg", 12, ["lazy", "local"]),
    ]
    assert [(kind, name) for kind, name, *_ in facts["defs"]] == [("function", "f")]


def test_a_dotted_name_with_spaces_is_the_name_python_reads():
    facts = extract_python(b"import a .  b  . c\nfrom . . pkg . mod import ( name )\nimport x . y as z\n")
    assert [row[:3] for row in facts["imports"]] == [["a.b.c", 0, []], ["pkg.mod", 2, ["name"]], ["x.y", 0, []]]


def test_a_namespace_packages_other_portions_are_other_distributions(tmp_path):
    # plone.api's shape (src/plone/api/, no plone/__init__.py), and google-cloud-python's packages
    root = write_tree(tmp_path / "r", {
        "pyproject.toml": "[project]\nname = 'plone.api'\n",
        "src/plone/api/__init__.py": "",
        "src/plone/api/content.py": (
            "from plone.app.iterate.dexterity import relation\nfrom plone.api.gone import x\n"
            "from google.api_core import retry\nfrom google.cloud.storage import blob\nfrom google.cloud import gone\n"
        ),
        "src/google/cloud/storage/__init__.py": "",
    })
    result = analyse(root)
    assert result.targets("mod:py:plone.api.content", "imports") == [
        "dep:pypi:google-api-core",
        "dep:pypi:google-cloud-gone",  # a name imported from the namespace package: another distribution's module
        "dep:pypi:plone-app-iterate",
        "mod:py:google.cloud.storage",  # the repository's own portion
        "mod:py:plone.api",  # plone.api.gone: missing from the repository's portion
    ]
