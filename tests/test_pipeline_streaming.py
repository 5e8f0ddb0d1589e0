"""A big source's graph is built in sorted runs on disk and merged: the document is the one memory alone makes."""

from analysis_jobs.pipeline import AnalysisState, RepositoryPipeline
from analysis_jobs.pipeline.graph import GraphRuns
from analysis_jobs.pipeline.repository import MemoryFactsCache
from tests.pipeline_support import analyse, config, write_tree


def tree(root):
    """Files whose facts meet in shared nodes (one dependency, one service, one module imported from many)."""
    files = {
        "requirements.txt": "requests==2.31.0\n",
        "package.json": '{"dependencies": {"left-pad": "^1.3.0"}}',
        "pkg/__init__.py": "",
        "pkg/core.py": "def helper():\n    return 1\n",
        "Dockerfile": "FROM python:3.11-slim\n",
    }
    for index in range(40):
        files[f"pkg/m{index}.py"] = (
            "import requests\nfrom pkg.core import helper\n\n\n"
            f"def f{index}():\n    return requests.get('https://api.example.com/v{index % 3}')\n"
        )
        files[f"web/c{index}.js"] = f"import pad from 'left-pad';\nexport function c{index}() {{ return pad('x', {index}); }}\n"
    return write_tree(root, files)


def test_a_graph_spilled_to_many_runs_seals_the_same_document_as_one_built_in_memory(tmp_path):
    root = tree(tmp_path / "repo")
    in_memory = analyse(root)
    spilled = analyse(root, facts_in_memory=10, batch_files=3)
    assert spilled.text == in_memory.text
    assert spilled.hash == in_memory.hash
    # The shared nodes met in many runs are each one node, their edges from every run.
    assert sorted(edge["dst"] for edge in spilled.edges_from("mod:py:pkg.m0")) == [
        "dep:pypi:requests", "mod:py:pkg.core", "svc:api.example.com", "sym:py:pkg.m0.f0",
    ]
    assert sum(edge["dst"] == "svc:api.example.com" for edge in spilled.edges) == 40
    assert sum(edge["dst"] == "dep:pypi:requests" for edge in spilled.edges) == 41


def test_the_runs_are_written_and_the_memory_kept_under_the_limit(tmp_path, monkeypatch):
    root = tree(tmp_path / "repo")
    seen = []
    spill = GraphRuns._spill

    def counting(self):
        seen.append(len(self.graph))
        spill(self)

    monkeypatch.setattr(GraphRuns, "_spill", counting)
    pipeline = RepositoryPipeline(config(facts_in_memory=10, batch_files=3), cache=MemoryFactsCache(), reuse=False)
    state = AnalysisState(source=str(root))
    for stage in pipeline.stages:
        stage.run(state, lambda: None)
    b"".join(pipeline.document(state))
    assert len(seen) > 10
    # A run holds at most one batch's facts beyond the limit.
    assert max(seen) < 10 + 3 * 40
