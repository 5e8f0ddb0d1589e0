"""
Re-analysis by splicing: after a change, the document spliced from the last one is byte for byte the document a
full link writes, whatever the change, and a change the splice cannot follow is linked in full.

Each case analyses a tree, changes it, then analyses it twice: splicing from the first analysis (``bases``), and
from nothing. The tree holds the corpus check's every pattern, and the shapes whose nodes several files report:
two files that define one Terraform block, two files of one module name, an image, a service and standard-library
modules that several files point at, an undeclared dependency imported twice.
"""

import shutil

import pytest

from analysis_jobs.pipeline.repository import MemoryFactsCache
from analysis_jobs.pipeline.splice import MemoryBases
from tests.pipeline_support import analyse, commit_tree, write_tree
from tests.test_pipeline_corpus import CORPUS

TREE = {
    **CORPUS,
    "requirements.txt": "requests==2.32.3\n",
    "app/jobs.py": "import json\nimport tomllib\nimport leftpad\nimport requests\n\ndef run():\n    requests.get('https://hooks.example.com/x')\n",
    "app/report.py": "import json\nimport leftpad\n\nclass Report:\n    pass\n",
    "app/single.py": "import colorsys\n\ndef only():\n    return 1\n",
    "src/app/jobs.py": "def run():\n    return 2\n",  # the module name app.jobs again: its own node, the same symbol
    "infra/extra.tf": 'variable "region" {\n  default = "eu"\n}\noutput "id" {\n  value = 1\n}\n',
    "worker/Dockerfile": "FROM python:3.12-slim\n",
    "docs/guide.md": "# Guide\n",
    "notes/a.txt": "a\n",
}

CHANGES = {
    "a function body": {"app/report.py": "import json\nimport leftpad\n\nclass Report:\n    size = 2\n"},
    "a function added": {"app/single.py": "import colorsys\n\ndef only():\n    return 1\n\ndef two():\n    return 2\n"},
    "a symbol gone": {"app/single.py": "import colorsys\n"},
    "the last import of a standard module gone": {"app/single.py": "def only():\n    return 1\n"},
    "a shared standard module dropped by one file": {"app/report.py": "import leftpad\n\nclass Report:\n    pass\n"},
    "an undeclared dependency dropped by one of two": {"app/report.py": "import json\n\nclass Report:\n    pass\n"},
    "an undeclared dependency dropped by both": {
        "app/report.py": "import json\n\nclass Report:\n    pass\n",
        "app/jobs.py": "import json\nimport tomllib\nimport requests\n\ndef run():\n    requests.get('https://hooks.example.com/x')\n",
    },
    "a new undeclared dependency": {"app/single.py": "import colorsys\nimport rightpad\n\ndef only():\n    return 1\n"},
    "a declared dependency no longer imported": {"app/jobs.py": "import json\nimport tomllib\nimport leftpad\n\ndef run():\n    return 0\n"},
    "a service gone": {"app/jobs.py": "import json\nimport tomllib\nimport leftpad\nimport requests\n\ndef run():\n    pass\n"},
    "a service added": {"app/report.py": "import json\nimport leftpad\nimport httpx\n\nhttpx.get('https://new.example.com/y')\n"},
    "a shared Terraform block moved": {"infra/extra.tf": '\n\nvariable "region" {\n  default = "us"\n}\noutput "id" {\n  value = 1\n}\n'},
    "a shared Terraform block dropped by one file": {"infra/extra.tf": 'output "id" {\n  value = 1\n}\n'},
    "a symbol two modules of one name define": {"src/app/jobs.py": "def run():\n    return 3\n\n\n\ndef more():\n    pass\n"},
    "an image one Dockerfile drops": {"worker/Dockerfile": "FROM debian:12\n"},
    "a parse error": {"app/single.py": "def only(:\n"},
    "a parse error mended": {"tools/gen.py": "def fine():\n    pass\n"},
    "a TypeScript export and a new npm package": {"web/src/later.ts": 'import dayjs from "dayjs";\nexport const later = 2;\n'},
    "a Kubernetes image": {"deploy/web.yaml": CORPUS["deploy/web.yaml"].replace("shop/web:1.0", "shop/web:1.1")},
    "a file no extractor reads": {"docs/guide.md": "# Guide\n\nMore.\n"},
    "a file added that no extractor reads": {"docs/new.md": "# New\n"},
    "a file removed that no extractor reads": {"notes/a.txt": None},
    "a binary file added": {"assets/logo.bin": b"\x00\x01\x02"},
    "two files at once": {"app/single.py": "import colorsys\nimport json\n", "worker/Dockerfile": "FROM python:3.13-slim\n"},
}

# Changes that change what the linker learns from the whole tree: these are linked in full.
LEARNT_CHANGES = {
    "a Python file added": {"app/extra.py": "import json\n"},
    "a Python file removed": {"app/single.py": None},
    "a manifest changed": {"requirements.txt": "requests==2.32.3\nleftpad==1\n"},
    "a workspace package renamed": {"packages/ui/package.json": '{"name": "@acme/widgets", "main": "index.js"}\n'},
    "an asset a script may import added": {"web/src/logo.svg": "<svg/>\n"},
}


def _apply(root, changes):
    for relative, content in changes.items():
        path = root / relative
        if content is None:
            path.unlink()
        else:
            write_tree(root, {relative: content})


def _three_ways(tmp_path, changes):
    """Return (spliced, linked in full) of ``TREE`` after ``changes``, the first spliced from an analysis before them."""
    root = write_tree(tmp_path / "repo", TREE)
    cache, bases = MemoryFactsCache(), MemoryBases()
    analyse(root, cache=cache, bases=bases)
    _apply(root, changes)
    return analyse(root, cache=cache, bases=bases), analyse(root, cache=cache)


@pytest.mark.parametrize("change", CHANGES, ids=list(CHANGES))
def test_a_spliced_document_is_the_document_a_full_link_writes(tmp_path, change):
    spliced, full = _three_ways(tmp_path, CHANGES[change])
    assert spliced.stats.get("spliced") == len(CHANGES[change])
    assert "spliced" not in full.stats and full.stats["linked_in_full"] == "no-basis"
    assert spliced.text == full.text
    assert spliced.hash == full.hash


@pytest.mark.parametrize("change", LEARNT_CHANGES, ids=list(LEARNT_CHANGES))
def test_a_change_to_what_the_linker_learns_is_linked_in_full(tmp_path, change):
    spliced, full = _three_ways(tmp_path, LEARNT_CHANGES[change])
    assert "spliced" not in spliced.stats and spliced.stats["linked_in_full"] == "learnt-changed"
    assert spliced.text == full.text


def test_the_changes_of_the_cases_change_the_facts(tmp_path):
    """Each case changes the document (a case that changed nothing would prove nothing)."""
    before = analyse(write_tree(tmp_path / "before", TREE)).text
    for number, changes in enumerate(CHANGES.values()):
        root = tmp_path / f"after{number}"
        shutil.copytree(tmp_path / "before", root)
        _apply(root, changes)
        assert analyse(root).text != before, changes


def test_splices_of_splices_stay_the_full_document(tmp_path):
    root = write_tree(tmp_path / "repo", TREE)
    cache, bases = MemoryFactsCache(), MemoryBases()
    analyse(root, cache=cache, bases=bases)
    for name in ("a function added", "a service added", "a symbol gone", "an image one Dockerfile drops", "a parse error"):
        _apply(root, CHANGES[name])
        spliced = analyse(root, cache=cache, bases=bases)
        assert "spliced" in spliced.stats
        assert spliced.text == analyse(root, cache=cache).text, name


def test_a_tree_without_edges_gains_them_by_a_splice(tmp_path):
    root = write_tree(tmp_path / "repo", {"README.md": "# r\n", "notes.txt": "n\n"})
    cache, bases = MemoryFactsCache(), MemoryBases()
    assert analyse(root, cache=cache, bases=bases).edges == []
    write_tree(root, {"Dockerfile": "FROM alpine:3\n"})  # not a file the linker learns from
    spliced = analyse(root, cache=cache, bases=bases)
    assert "spliced" in spliced.stats and spliced.edges
    assert spliced.text == analyse(root, cache=cache).text


def test_adding_the_dockerfile_a_compose_service_builds_from_links_them(tmp_path):
    root = write_tree(tmp_path / "repo", {"compose.yaml": "services:\n  api:\n    build: ./api\n", "README.md": "# r\n"})
    cache, bases = MemoryFactsCache(), MemoryBases()
    assert not analyse(root, cache=cache, bases=bases).targets("compose:compose.yaml#api", "built_from")
    write_tree(root, {"api/Dockerfile": "FROM alpine:3\n"})
    again = analyse(root, cache=cache, bases=bases)
    assert again.targets("compose:compose.yaml#api", "built_from") == ["file:api/Dockerfile"]
    assert again.text == analyse(root, cache=cache).text


def test_old_facts_pruned_from_the_cache_mean_a_full_link(tmp_path):
    root = write_tree(tmp_path / "repo", TREE)
    cache, bases = MemoryFactsCache(), MemoryBases()
    analyse(root, cache=cache, bases=bases)
    _apply(root, CHANGES["a function added"])
    cache.entries.clear()  # as ``prune_analysis_cache`` would
    relinked = analyse(root, cache=cache, bases=bases)
    assert "spliced" not in relinked.stats and relinked.stats["linked_in_full"] == "facts-pruned"
    assert relinked.text == analyse(root).text


def test_changes_whose_facts_outgrow_the_memory_limit_mean_a_full_link(tmp_path):
    root = write_tree(tmp_path / "repo", TREE)
    cache, bases = MemoryFactsCache(), MemoryBases()
    analyse(root, cache=cache, bases=bases, facts_in_memory=10)
    _apply(root, CHANGES["two files at once"])
    relinked = analyse(root, cache=cache, bases=bases, facts_in_memory=10)
    assert "spliced" not in relinked.stats and relinked.stats["linked_in_full"] == "too-many-changes"
    assert relinked.text == analyse(root, facts_in_memory=10).text
    _apply(root, CHANGES["a function body"])
    assert analyse(root, cache=cache, bases=bases, facts_in_memory=1000).stats.get("spliced") == 1  # the limit decided


def test_a_module_grown_too_large_to_read_and_back_is_spliced_as_a_full_link_writes_it(tmp_path):
    # Unread, it is still a module (what the linker learns is the same), with no facts of its own.
    root = write_tree(tmp_path / "repo", TREE)
    cache, bases, limit = MemoryFactsCache(), MemoryBases(), 2000
    analyse(root, cache=cache, bases=bases, max_file_bytes=limit)
    for content in ("import json\n" + "x = 1\n" * 400, TREE["app/report.py"]):
        _apply(root, {"app/report.py": content})
        spliced = analyse(root, cache=cache, bases=bases, max_file_bytes=limit)
        assert spliced.stats.get("spliced") == 1
        assert spliced.text == analyse(root, cache=cache, max_file_bytes=limit).text
    assert "mod:py:app.report" in spliced.nodes


def test_the_summary_of_a_splice_is_the_full_one(tmp_path):
    spliced, full = _three_ways(tmp_path, CHANGES["an undeclared dependency dropped by both"])
    assert spliced.state.values["summary"].result() == full.summary
    assert "leftpad" not in str(full.summary["dependencies"])


def test_the_next_commit_is_spliced_from_the_last_one(tmp_path):
    root = write_tree(tmp_path / "repo", TREE)
    first = commit_tree(root)
    cache, bases = MemoryFactsCache(), MemoryBases()
    analyse(root, commit=first, cache=cache, bases=bases)
    _apply(root, CHANGES["a service added"])
    second = commit_tree(root)
    spliced = analyse(root, commit=second, cache=cache, bases=bases)
    assert spliced.stats.get("spliced") == 1
    assert spliced.text == analyse(root, commit=second, cache=cache).text
