"""
The whole pipeline on real trees: Django's own source (from site-packages) and this project's committed tree.

Counts are checked against an independent ``os.walk``. Each Django analysis costs seconds, so the module
analyses it twice in all: once cold, and once cold again on a changed copy to prove that the incremental
re-analysis (which parses only the changed files) converges on the same graph hash.
"""

import io
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import django
import pytest

from analysis_jobs.pipeline.repository import MemoryFactsCache
from tests.pipeline_support import analyse, git

DJANGO = Path(django.__file__).resolve().parent
PROJECT = Path(__file__).resolve().parent.parent
SKIPPED_DIRS = {"__pycache__", ".git", "node_modules", ".venv", "venv", "build", "dist"}


def walk_count(root: Path) -> tuple[int, int]:
    """Return (files, .py files) under ``root`` the way the pipeline's defaults see them, counted by os.walk."""
    total = python = 0
    for directory, dirnames, filenames in os.walk(root):
        dirnames[:] = [name for name in dirnames if name not in SKIPPED_DIRS and not name.endswith(".egg-info")]
        for name in filenames:
            if name.endswith((".pyc", ".pyo", ".pyd")) or os.path.islink(os.path.join(directory, name)):
                continue
            total += 1
            python += name.endswith(".py")
    return total, python


@pytest.fixture(scope="module")
def django_cache():
    return MemoryFactsCache()


@pytest.fixture(scope="module")
def django_full(django_cache):
    return analyse(DJANGO, cache=django_cache)


def test_django_counts_match_an_independent_walk(django_full):
    files, python = walk_count(DJANGO)
    assert django_full.summary["files"] == files
    assert django_full.summary["modules"]["python"] == python
    assert sum(1 for node_id in django_full.of_kind("file") if node_id.endswith(".py")) == python
    assert django_full.stats["listed"] == django_full.stats["read"] == files  # nothing over the size cap


def test_django_facts_are_real(django_full):
    result = django_full
    assert "mod:py:django.db.models.base" in result.nodes  # the package-shaped root is named from its imports
    assert "mod:py:django.db.models" in result.targets("mod:py:django.db.models.base", "imports")
    assert "sym:py:django.db.models.base.Model" in result.nodes
    model = result.nodes["sym:py:django.db.models.base.Model"]
    assert model["kind"] == "class" and model["evidence"][0]["path"] == "db/models/base.py"
    assert result.nodes["dep:pypi:asgiref"]["attrs"]["declared"] is False  # imported, declared in no manifest here
    assert "mod:js:contrib/admin/static/admin/js/actions.js" in result.nodes
    assert result.summary["diagnostics"] == len(result.of_kind("diagnostic"))


def test_an_incremental_reanalysis_parses_only_the_changed_files_and_converges_with_a_full_one(django_full, django_cache, tmp_path):
    copy = tmp_path / "django"
    shutil.copytree(DJANGO, copy, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    (copy / "utils" / "text.py").write_text((copy / "utils" / "text.py").read_text() + "\n\ndef added():\n    import json\n")
    (copy / "contrib" / "admin" / "static" / "admin" / "js" / "actions.js").write_text("import x from './core.js';\n")
    (copy / "new_module.py").write_text("from django.utils import text\n")
    incremental = analyse(copy, cache=django_cache)
    assert incremental.stats["parsed"] == 3  # two changed files and one new one; the rest came from the cache
    full = analyse(copy)  # a fresh cache: everything parsed again
    assert full.stats["parsed"] >= django_full.stats["parsed"]
    assert incremental.hash == full.hash
    assert incremental.hash != django_full.hash
    assert "sym:py:django.utils.text.added" in full.nodes


@pytest.fixture(scope="module")
def project_tree(tmp_path_factory):
    """This project's committed tree, unpacked by ``git archive`` (the work tree changes while tests run)."""
    target = tmp_path_factory.mktemp("project")
    commit = git(PROJECT, "rev-parse", "HEAD")  # pinned: others may commit while this module runs
    env = {name: value for name, value in os.environ.items() if not name.startswith("GIT_")}
    archive = subprocess.run(["git", "-C", str(PROJECT), "archive", commit], check=True, capture_output=True, env=env).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(target, filter="data")
    return target, commit


def test_the_project_tree_counts_match_and_its_revision_gives_the_same_hash(project_tree):
    tree, commit = project_tree
    result = analyse(tree)
    files, python = walk_count(tree)
    assert (result.summary["files"], result.summary["modules"]["python"]) == (files, python)
    assert "mod:py:analysis_jobs.pipeline.repository" in result.nodes
    assert "dep:pypi:django" in result.targets("mod:py:analysis_jobs.models", "imports")
    assert result.nodes["dep:pypi:django"]["attrs"]["declared"] is True  # requirements.txt
    assert analyse(PROJECT, commit=commit).hash == result.hash


def test_a_few_changed_files_are_all_that_is_parsed_again(project_tree, tmp_path):
    copy = tmp_path / "project"
    shutil.copytree(project_tree[0], copy)
    cache = MemoryFactsCache()
    first = analyse(copy, cache=cache)
    (copy / "analysis_jobs" / "clock.py").write_text((copy / "analysis_jobs" / "clock.py").read_text() + "\n\ndef extra():\n    pass\n")
    (copy / "requirements.txt").write_text((copy / "requirements.txt").read_text() + "httpx==0.28.1\n")
    again = analyse(copy, cache=cache)
    assert (again.stats["parsed"], again.stats["cached"]) == (2, first.stats["parsed"] + first.stats["cached"] - 2)
    assert again.hash == analyse(copy).hash != first.hash
