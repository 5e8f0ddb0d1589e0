"""The link makes no reference cycle: the worker pauses the cycle collector for a whole attempt (worker.py), so
what a cycle holds would stay alive until the attempt ends."""

import gc

import pytest

from analysis_jobs.pipeline import AnalysisState, RepositoryPipeline
from analysis_jobs.pipeline.graph import GraphRuns
from analysis_jobs.pipeline.link import Linker
from analysis_jobs.pipeline.repository import MemoryFactsCache
from analysis_jobs.pipeline.splice import MemoryBases
from tests.pipeline_support import analyse, config, write_tree

FILES = {  # something for every family to learn and to emit
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
def collector_paused():
    enabled = gc.isenabled()
    gc.collect()
    gc.disable()
    yield
    if enabled:
        gc.enable()


def test_linking_leaves_no_cyclic_garbage(tmp_path, collector_paused):
    pipeline = RepositoryPipeline(config(), cache=MemoryFactsCache(), bases=MemoryBases(), reuse=False)
    state = AnalysisState(source=str(write_tree(tmp_path / "repo", FILES)))
    for stage in pipeline.stages[:2]:
        stage.run(state, lambda: None)
    linker, runs = Linker(state.values["records"]), GraphRuns()
    gc.collect()  # what the extraction left
    linker.link(runs)
    nodes, edges = runs.build()
    assert "dep:pypi:requests" in {node["id"] for node in nodes}
    assert "mod:js:src/x.ts" in {edge["dst"] for edge in edges}  # the tsconfig alias, resolved
    del linker, runs, nodes, edges
    # A family that held the linker holding it (as they all once did) leaves the linker, the families and all
    # they learnt for the collector.
    assert gc.collect() == 0


def test_a_splice_leaves_no_cyclic_garbage(tmp_path, collector_paused):
    root = write_tree(tmp_path / "repo", FILES)
    cache, bases = MemoryFactsCache(), MemoryBases()
    analyse(root, cache=cache, bases=bases)
    write_tree(root, {"pkg/core.py": "import requests\n\n\ndef helper():\n    return 1\n"})
    pipeline = RepositoryPipeline(config(), cache=cache, bases=bases, reuse=False)
    state = AnalysisState(source=str(root))
    for stage in pipeline.stages:
        stage.run(state, lambda: None)
    gc.collect()  # what the extraction left
    assert state.values["stats"]["spliced"] == 1
    assert b"".join(pipeline.document(state))
    del state
    assert gc.collect() == 0
