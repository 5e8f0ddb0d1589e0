"""Helpers for the pipeline tests: run the real pipeline on a tree without a database, write fixture trees."""

import json
import os
import subprocess
from pathlib import Path

from analysis_jobs.pipeline import AnalysisState, RepositoryPipeline, canonical_json, content_hash
from analysis_jobs.pipeline.config import PipelineConfig
from analysis_jobs.pipeline.repository import MemoryFactsCache
from analysis_jobs.pipeline.splice import MemoryBases

DEFAULT_EXCLUDE = (".git/", "node_modules/", ".venv/", "venv/", "__pycache__/", "*.py[cod]", "build/", "dist/", "*.egg-info/")


class Result:
    def __init__(self, state, pipeline):
        self.state = state
        self.text = b"".join(pipeline.document(state)).decode()
        self.document = json.loads(self.text)
        assert canonical_json(self.document) == self.text  # written in pieces, the same bytes as written whole
        self.hash = content_hash(self.text)
        self.identity = pipeline.identity(state)
        self.stats = state.values["stats"]
        self.nodes = {node["id"]: node for node in self.document["nodes"]}
        self.edges = self.document["edges"]
        self.summary = self.document["summary"]

    def edges_from(self, src, kind=None):
        return [edge for edge in self.edges if edge["src"] == src and (kind is None or edge["kind"] == kind)]

    def targets(self, src, kind):
        return sorted(edge["dst"] for edge in self.edges_from(src, kind))

    def of_kind(self, kind):
        return {node_id: node for node_id, node in self.nodes.items() if node["kind"] == kind}


def config(**overrides) -> PipelineConfig:
    values = dict(exclude=DEFAULT_EXCLUDE)
    values.update(overrides)
    return PipelineConfig(**values)


def analyse(source, *, commit="", revision="", cache=None, bases=None, monotonic=None, time_ns=None, **overrides) -> Result:
    """Run every stage of the repository pipeline on ``source``, with an in-memory facts cache.

    Given ``bases`` (a ``MemoryBases``), the analysis splices from the last one sealed into them if it can, and
    its own document is sealed into them as the worker would seal it.
    """
    kwargs = {"cache": cache if cache is not None else MemoryFactsCache(), "reuse": False,
              "bases": bases if bases is not None else MemoryBases()}
    if monotonic is not None:
        kwargs["monotonic"] = monotonic
    if time_ns is not None:
        kwargs["time_ns"] = time_ns
    pipeline = RepositoryPipeline(config(**overrides), **kwargs)
    state = AnalysisState(source=str(source), revision=revision, commit=commit)
    for stage in pipeline.stages:
        stage.run(state, lambda: None)
    result = Result(state, pipeline)
    if bases is not None:
        snapshot_id = len(bases.documents) + 1
        bases.documents[snapshot_id] = result.text
        pipeline.sealed(state, snapshot_id)
    return result


def write_tree(root: Path, files: dict) -> Path:
    """Write ``{relative path: text or bytes}`` under ``root``."""
    for relative, content in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    return root


def git(root, *args) -> str:
    command = ["git", "-C", str(root), "-c", "user.name=test", "-c", "user.email=test@example.com", *args]
    env = {name: value for name, value in os.environ.items() if not name.startswith("GIT_")}  # e.g. run from a hook
    return subprocess.run(command, check=True, capture_output=True, text=True, env=env).stdout.strip()


def commit_tree(root) -> str:
    if not (Path(root) / ".git").exists():
        git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "--allow-empty", "-m", "change")
    return git(root, "rev-parse", "HEAD")
