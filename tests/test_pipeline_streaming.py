"""A big source's graph is built in sorted runs on disk and merged: the document is the one memory alone makes."""

from analysis_jobs.pipeline import AnalysisState, RepositoryPipeline
from analysis_jobs.pipeline.graph import GraphRuns
from analysis_jobs.pipeline.repository import MemoryFactsCache
from analysis_jobs.pipeline.splice import MemoryBases
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
    pipeline = RepositoryPipeline(config(facts_in_memory=10, batch_files=3), cache=MemoryFactsCache(), bases=MemoryBases(), reuse=False)
    state = AnalysisState(source=str(root))
    for stage in pipeline.stages:
        stage.run(state, lambda: None)
    b"".join(pipeline.document(state))
    assert len(seen) > 10
    # A run holds at most one batch's facts beyond the limit.
    assert max(seen) < 10 + 3 * 40


def test_a_run_gives_back_the_facts_it_was_given_integers_past_64_bits_and_all(tmp_path):
    def report(graph, part):
        graph.node("n:big", "constant", {"value": 2**70 + part, "name": "größe"}, ("a.py", part, part, "python@1"))
        graph.node(f"n:{part}", "constant", {"value": -(2**64) - part}, ("a.py", part, part, "python@1"))
        graph.edge("n:big", "uses", f"n:{part}", {"weight": 2**65}, ("a.py", part, part + 1, "python@1"))
        graph.edge("n:big", "uses", "n:0", {"weight": 2**65}, ("b.py", part, part, "python@1"))

    runs = GraphRuns(limit=0, directory=str(tmp_path))
    whole = GraphRuns(limit=10**9)
    for part in range(5):
        report(runs.graph, part)
        report(whole.graph, part)
        runs.checkpoint()
    assert len(runs.runs) == 5
    spilled, in_memory = (tuple(map(list, graph.build())) for graph in (runs, whole))
    assert spilled == in_memory
    nodes, edges = in_memory
    assert nodes[0] == {"id": "n:0", "kind": "constant", "attrs": {"value": -(2**64)},
                        "evidence": [{"path": "a.py", "lines": [0, 0], "extractor": "python@1"}]}
    assert nodes[-1]["attrs"] == {"value": 2**70, "name": "größe"}  # the first report's
    assert edges[0]["evidence"] == [{"path": "a.py", "lines": [0, 1], "extractor": "python@1"}] + [
        {"path": "b.py", "lines": [part, part], "extractor": "python@1"} for part in range(5)
    ]
    runs.close()
