"""The scale benchmark's synthetic monorepo: the same tree for the same seed, with the shapes real repositories have."""

import ast
import json
import os
import time

from bench.monorepo import AT_REST_SECONDS, MAX_BYTES, MIN_BYTES, generate

FILES = 600


def contents(root, tree) -> dict:
    return {path: (root / path).read_bytes() for path in tree.paths}


def test_the_same_seed_writes_the_same_tree_and_another_seed_does_not(tmp_path):
    first, again, other = (generate(tmp_path / name, FILES, seed=seed) for name, seed in (("a", 0), ("b", 0), ("c", 1)))

    assert contents(tmp_path / "a", first) == contents(tmp_path / "b", again)
    assert contents(tmp_path / "a", first) != contents(tmp_path / "c", other)


def test_it_writes_exactly_the_files_asked_for(tmp_path):
    tree = generate(tmp_path, FILES)

    on_disk = sorted(os.path.relpath(os.path.join(d, n), tmp_path) for d, _, names in os.walk(tmp_path) for n in names)
    assert on_disk == sorted(tree.paths)
    assert len(on_disk) == FILES


def test_it_has_the_shapes_of_a_real_monorepo(tmp_path):
    tree = generate(tmp_path, FILES)
    names = tree.names()

    assert min(names["__init__.py"], names["conftest.py"], names["index.ts"], names["package.json"]) >= 2
    for manifest in ("requirements.txt", "pyproject.toml", "package-lock.json", "Dockerfile", "main.tf"):
        assert names[manifest] >= 1, manifest
    namespace = tmp_path / "libs" / "acme"
    assert not (namespace / "__init__.py").exists()
    assert all((package / "__init__.py").exists() for package in namespace.iterdir())
    assert json.loads((tmp_path / "package.json").read_text())["workspaces"] == ["packages/*"]


def test_its_files_parse_and_are_of_typical_sizes(tmp_path):
    tree = generate(tmp_path, FILES)
    modules = [p for p in tree.paths if p.endswith((".py", ".ts", ".tsx", ".js")) and not p.endswith(("__init__.py", "index.ts"))]

    for path in tree.paths:
        if path.endswith(".py"):
            ast.parse((tmp_path / path).read_bytes(), path)
        elif path.endswith(".json"):
            json.loads((tmp_path / path).read_text())
    sizes = [os.path.getsize(tmp_path / path) for path in modules]
    assert MIN_BYTES <= min(sizes) and max(sizes) <= MAX_BYTES + 1024  # the drawn size, plus at most one block


def test_its_files_are_at_rest(tmp_path):
    tree = generate(tmp_path, FILES)

    newest = max(os.stat(tmp_path / path).st_mtime for path in tree.paths)
    assert newest <= time.time() - AT_REST_SECONDS + 60


def test_the_every_grammar_floor_parses_each_kind_of_source_the_tree_holds(tmp_path):
    from bench.workloads import FLOOR_GRAMMARS, floor_grammar

    tree = generate(tmp_path, FILES)
    parsed = {path: floor_grammar(path.rsplit("/", 1)[-1]) for path in tree.paths}

    assert set(parsed.values()) - {None} == set(FLOOR_GRAMMARS)
    assert {path.rsplit(".", 1)[-1] for path, grammar in parsed.items() if grammar is None} == {"json", "md", "toml", "txt"}
    assert parsed["packages/pkg000/src/part03.tsx"] == "tsx" and parsed["Dockerfile"] == "dockerfile"


def test_the_floors_run_with_the_cycle_collector_paused_as_the_worker_runs_an_attempt(tmp_path):
    import gc

    from bench.workloads import _timed_floor

    generate(tmp_path, 20)
    seen = []
    assert gc.isenabled()
    _timed_floor(tmp_path, lambda name, data: seen.append(gc.isenabled()))
    assert len(seen) == 20 and not any(seen)
    assert gc.isenabled()
