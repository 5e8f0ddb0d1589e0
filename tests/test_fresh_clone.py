"""A bare ``pytest`` in a fresh clone, before anything has made its working folders."""

import os
import shutil
import subprocess
import sys

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.sqlite_only  # a fresh clone tests on the embedded default


def test_bare_pytest_runs_in_a_fresh_clone_without_var(tmp_path):
    clone = tmp_path / "clone"
    tracked = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], check=True, capture_output=True).stdout
    for relative in filter(None, tracked.decode().split("\0")):
        if (ROOT / relative).is_file():
            (clone / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / relative, clone / relative)
    assert not (clone / "var").exists()
    env = {name: value for name, value in os.environ.items() if name not in ("DATABASE_URL", "PARTHA_TEST_ENGINE")}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_models.py", "-k", "only_one_active"],
        cwd=clone, env=env, capture_output=True, text=True,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert (clone / "var").is_dir()
