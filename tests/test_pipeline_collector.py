"""The cyclic collector is paused while a graph is linked and written, and the link leaves no cycle to collect."""

import gc
import threading

import pytest

from analysis_jobs.pipeline import AnalysisState, RepositoryPipeline
from analysis_jobs.pipeline.collector import collector_paused
from analysis_jobs.pipeline.graph import GraphRuns
from analysis_jobs.pipeline.link import Linker
from analysis_jobs.pipeline.repository import MemoryFactsCache
from tests.pipeline_support import config, write_tree

FILES = {
    "requirements.txt": "requests==2.31.0\n",
    "package.json": '{"name": "web", "dependencies": {"left-pad": "^1.3.0"}}',
    "tsconfig.json": '{"compilerOptions": {"paths": {"@app/*": ["src/*"]}}}',
    "pkg/__init__.py": "",
    "pkg/core.py": "import requests\n\n\ndef helper():\n    return requests.get('https://api.example.com/v1')\n",
    "web/index.ts": "import pad from 'left-pad';\nimport { x } from '@app/x';\nexport const y = pad(x, 2);\n",
    "src/x.ts": "export const x = 'x';\n",
    "Dockerfile": "FROM python:3.11-slim\n",
    "main.tf": 'module "vpc" {\n  source = "terraform-aws-modules/vpc/aws"\n  version = "5.0.0"\n}\n',
}


@pytest.fixture
def collector():
    """The collector enabled, and left after the test as the test found it."""
    enabled = gc.isenabled()
    gc.enable()
    yield
    (gc.enable if enabled else gc.disable)()


def extracted(root):
    pipeline = RepositoryPipeline(config(), cache=MemoryFactsCache(), reuse=False)
    state = AnalysisState(source=str(write_tree(root, FILES)))
    for stage in pipeline.stages[:2]:
        stage.run(state, lambda: None)
    return pipeline, state


def test_the_collector_is_paused_while_the_graph_is_linked_and_written(tmp_path, collector, monkeypatch):
    pipeline, state = extracted(tmp_path / "repo")
    seen = {"link": [], "document": []}
    checkpoint = GraphRuns.checkpoint

    def checking(self):
        seen["link"].append(gc.isenabled())
        checkpoint(self)

    monkeypatch.setattr(GraphRuns, "checkpoint", checking)
    pipeline.link(state, lambda: None)
    pieces = []
    for piece in pipeline.document(state):
        seen["document"].append(gc.isenabled())
        pieces.append(piece)
    assert b'"dep:pypi:requests"' in b"".join(pieces)
    assert seen["link"] and seen["document"]
    assert not any(seen["link"]) and not any(seen["document"])
    assert gc.isenabled()  # and it runs again once they are done


def test_linking_leaves_no_cyclic_garbage(tmp_path, collector):
    # With the collector paused, what a cycle holds is freed only when it runs again: the families must not
    # refer back to the linker that holds them, or all they learnt would outlive the link.
    pipeline, state = extracted(tmp_path / "repo")
    linker = Linker(state.values["records"])
    gc.collect()  # what the extraction left
    gc.disable()
    runs = GraphRuns()
    linker.link(runs)
    del linker
    runs.close()
    assert gc.collect() == 0


def test_the_collector_runs_again_when_the_last_pause_is_done(collector):
    entered, leave = threading.Barrier(2), threading.Event()

    def other():
        with collector_paused():
            entered.wait()
            leave.wait()

    thread = threading.Thread(target=other, daemon=True)
    try:
        with collector_paused():
            thread.start()
            entered.wait()  # both pauses are held
        assert not gc.isenabled()  # the other one still is
    finally:
        leave.set()
        thread.join()
    assert gc.isenabled()


def test_a_collector_disabled_before_stays_disabled(collector):
    gc.disable()
    with collector_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()
