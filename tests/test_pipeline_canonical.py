"""Canonical snapshots: one byte form, the same hash for the same content wherever it lives, a stable identity."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from analysis_jobs.pipeline import canonical, canonical_json, content_hash, repository
from analysis_jobs.pipeline.config import PipelineConfig
from analysis_jobs.pipeline.graph import GraphBuilder
from analysis_jobs.pipeline.repository import snapshot_identity
from tests.pipeline_support import analyse, write_tree

FILES = {
    "pkg/__init__.py": "",
    "pkg/app.py": "import os\nimport os\nfrom pkg import util\n\n\ndef main():\n    return os.getcwd()\n",
    "pkg/util.py": "import requests\nrequests.post('https://hooks.example.com/x')\n",
    "web/index.js": "import x from 'lodash';\n",
    "requirements.txt": "requests==2.32.3\n",
    "Dockerfile": "FROM python:3.12\n",
}


def test_canonical_json_sorts_keys_normalises_strings_and_drops_space():
    text = canonical_json({"b": "cafe\u0301", "a": [1, ("x", True, None)], "\u0065\u0301": 2})
    assert text == '{"a":[1,["x",true,null]],"b":"caf\u00e9","\u00e9":2}'
    assert content_hash(text) == content_hash(canonical_json({"\u00e9": 2, "b": "caf\u00e9", "a": [1, ["x", True, None]]}))


@pytest.mark.parametrize("document", [{"a": 1.5}, {"a": [{"b": 2.0}]}, {"a": float("nan")}, {"a": [1e20]}, {"a": -0.25}])
def test_canonical_json_refuses_floats(document):
    with pytest.raises(TypeError, match="no floats"):
        canonical_json(document)


def test_a_string_that_looks_like_a_float_is_only_a_string():
    assert canonical_json({"url": "http://h:1.5", "v": [":2e3"]}) == '{"url":"http://h:1.5","v":[":2e3"]}'


# Strings made to look like what the fast path must doubt: floats, NaN's "null", non-NFC text, lone surrogates.
PIECES = st.characters(exclude_categories=()) | st.sampled_from(
    [*':,[-.eE0123456789"\\', "null", ":1.5", "e\u0301", "A\u030a", "\u1100\u1161", "\ud800"]
)
TEXT = st.lists(PIECES, max_size=12).map("".join)
PLAIN = st.recursive(
    st.booleans() | st.integers() | TEXT,
    lambda values: st.lists(values) | st.tuples(values, values) | st.dictionaries(TEXT, values),
    max_leaves=20,
)
# Half the documents hold only what the fast path writes itself, the rest also one value it must hand on.
DOUBTED = st.sampled_from([None, float("nan"), float("-inf"), 1e16, -0.0]) | st.floats()
DOCUMENTS = st.tuples(PLAIN, st.lists(DOUBTED, max_size=1)).map(lambda parts: {"facts": parts[0], "more": parts[1]})


def _outcome(encode, document):
    try:
        return encode(document)
    except TypeError as error:
        return f"TypeError: {error}"


@given(DOCUMENTS)
def test_the_fast_encoder_writes_what_the_reference_writes_and_refuses_what_it_refuses(document):
    assert _outcome(canonical_json, document) == _outcome(canonical._reference, document)


def test_a_none_is_written_as_null_but_a_nan_is_refused():
    assert canonical_json({"a": None, "b": [None]}) == '{"a":null,"b":[null]}'
    with pytest.raises(TypeError, match="no floats"):
        canonical_json({"a": [float("inf")]})


def test_a_lone_surrogate_is_refused_with_a_clear_error():
    with pytest.raises(TypeError, match="lone surrogate"):
        canonical_json({"a": "x\ud800"})


def test_a_literal_that_spells_a_lone_surrogate_becomes_its_escape_in_the_facts(tmp_path):
    root = write_tree(tmp_path / "r", {
        "app.py": 'import requests\nrequests.get("https://a\\ud800b.example/x")\n',
        "package.json": '{"dependencies": {"left\\ud800pad": "1.0.0"}}\n',
    })
    result = analyse(root)
    assert result.nodes["svc:a\\ud800b.example"]["attrs"]["host"] == "a\\ud800b.example"
    assert "dep:npm:left\\ud800pad" in result.nodes
    assert result.hash == content_hash(result.text)


def test_facts_reported_twice_are_one_fact_with_both_evidences():
    graph = GraphBuilder()
    graph.edge("mod:py:a", "imports", "std:py:os", None, ("a.py", 2, 2, "python@1"))
    graph.edge("mod:py:a", "imports", "std:py:os", None, ("a.py", 1, 1, "python@1"))
    graph.edge("mod:py:a", "imports", "std:py:os", None, ("a.py", 1, 1, "python@1"))
    graph.node("std:py:os", "stdlib", {"name": "os"})
    graph.node("std:py:os", "stdlib", {"name": "os"})
    nodes, edges = graph.build()
    assert len(nodes) == 1 and len(edges) == 1
    assert [item["lines"] for item in edges[0]["evidence"]] == [[1, 1], [2, 2]]


def test_the_same_content_from_two_paths_written_in_two_orders_has_one_hash(tmp_path):
    first = write_tree(tmp_path / "one", FILES)
    second = write_tree(tmp_path / "elsewhere" / "two", dict(reversed(list(FILES.items()))))
    a, b = analyse(first), analyse(second)
    assert a.text == b.text and a.hash == b.hash
    assert analyse(first).text == a.text  # and twice in a row
    assert str(tmp_path) not in a.text


def test_the_document_holds_only_facts(tmp_path):
    result = analyse(write_tree(tmp_path / "r", FILES))
    assert set(result.document) == {"schema", "extractors", "nodes", "edges", "summary"}
    assert result.document["schema"] == "ri.v1"
    assert [node["id"] for node in result.document["nodes"]] == sorted(result.nodes)
    keys = [(edge["src"], edge["kind"], edge["dst"]) for edge in result.edges]
    assert keys == sorted(keys)
    for fact in result.document["nodes"] + result.edges:
        for item in fact["evidence"]:
            assert set(item) == {"path", "lines", "extractor"} and 1 <= item["lines"][0] <= item["lines"][1]
            assert "@" in item["extractor"]
    imports = [edge for edge in result.edges if edge["src"] == "mod:py:pkg.app" and edge["dst"] == "std:py:os"]
    assert len(imports) == 1 and [item["lines"] for item in imports[0]["evidence"]] == [[1, 1], [2, 2]]


def test_a_change_to_one_file_changes_the_hash(tmp_path):
    root = write_tree(tmp_path / "r", FILES)
    before = analyse(root).hash
    write_tree(root, {"pkg/util.py": "import requests\nrequests.post('https://hooks.example.com/y')\n"})
    assert analyse(root).hash != before


def test_the_snapshot_identity_covers_source_revision_and_config(monkeypatch):
    config = PipelineConfig(exclude=("build/",))
    base = snapshot_identity("git:/r", "abc", config)
    assert base == snapshot_identity("git:/r", "abc", PipelineConfig(exclude=("build/",), max_files=5))  # budgets only fail
    assert len({
        base,
        snapshot_identity("git:/other", "abc", config),
        snapshot_identity("git:/r", "abd", config),
        snapshot_identity("git:/r", "abc", PipelineConfig(exclude=("dist/",))),
        snapshot_identity("git:/r", "abc", PipelineConfig(exclude=("build/",), max_file_bytes=10)),
    }) == 5
    # Linking moved: the same files' cached facts make different facts, so no sealed snapshot may be reused.
    monkeypatch.setattr(repository, "LINK_VERSION", "linked-otherwise")
    assert snapshot_identity("git:/r", "abc", config) != base
