"""
Parsing over processes (``ANALYSIS_EXTRACT_PROCESSES``): the same document as parsing in the worker's process,
processes only for batches worth them, and none left behind however the parsing ends.
"""

import multiprocessing
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from analysis_jobs.exceptions import JobCancelled
from analysis_jobs.pipeline import parsing, repository
from analysis_jobs.pipeline.config import PipelineConfig
from analysis_jobs.pipeline.extractors import ALL, BY_KEY, PYTHON, extractor_for
from analysis_jobs.pipeline.parsing import ParseProcessFailed, Parsers, facts_of
from analysis_jobs.pipeline.repository import MemoryFactsCache
from bench import monorepo
from tests.pipeline_support import analyse, write_tree
from tests.test_pipeline_corpus import CORPUS

ROOT = Path(__file__).resolve().parent.parent


def _dies(key, data):  # sent to a parsing process by name
    os._exit(3)


def test_over_processes_the_document_is_the_same_byte_for_byte(tmp_path):
    source = tmp_path / "monorepo"
    monorepo.generate(source, 700)
    write_tree(source / "corpus", CORPUS)

    here = analyse(source)
    shared = analyse(source, extract_processes=2)

    assert here.stats["parse_processes"] == 0
    assert shared.stats["parse_processes"] == 2
    assert shared.stats["parsed"] == here.stats["parsed"] > 600
    assert shared.text == here.text


def test_the_worker_reads_the_next_batch_while_the_last_one_is_parsed(tmp_path, monkeypatch):
    events = []

    class Cache(MemoryFactsCache):
        def get_many(self, keys):  # the look-up of the facts of the files a batch has just read
            events.append(("read", len(keys)))
            return super().get_many(keys)

        def put_many(self, facts):
            events.append(("cached", len(facts)))
            super().put_many(facts)

    class Spy(Parsers):
        def start(self, work, check):
            events.append(("parsing", len(work)))
            return super().start(work, check)

    monkeypatch.setattr(repository, "Parsers", Spy)
    monkeypatch.setattr(parsing, "SHARED_FROM", 1)
    source = write_tree(tmp_path / "r", {f"m{i}.py": f"import m{i + 1}\n" for i in range(5)})

    result = analyse(source, cache=Cache(), batch_files=2, extract_processes=2)

    assert events == [
        ("read", 2), ("parsing", 2),
        ("read", 2), ("parsing", 2), ("cached", 2),  # the first batch's facts wait until the second is read
        ("read", 1), ("parsing", 1), ("cached", 2),
        ("cached", 1),
    ]
    assert result.stats["parse_processes"] == 2


def test_a_content_being_parsed_is_not_parsed_again_for_the_next_batch(tmp_path):
    source = write_tree(tmp_path / "r", {"a/__init__.py": "", "b/__init__.py": "", "c/__init__.py": "", "c/x.py": "import a\n"})

    result = analyse(source, batch_files=1)

    assert (result.stats["parsed"], result.stats["cached"]) == (2, 2)
    assert result.text == analyse(source).text


def test_a_batch_with_few_files_to_parse_is_parsed_in_the_workers_own_process(tmp_path):
    source = write_tree(tmp_path / "corpus", CORPUS)
    assert len(CORPUS) < parsing.SHARED_FROM

    result = analyse(source, extract_processes=4)

    assert result.stats["parse_processes"] == 0
    assert result.stats["parsed"] > 0


def test_every_extractor_a_file_can_get_is_known_to_the_parsing_processes_by_key():
    assert set(BY_KEY.values()) == set(ALL)
    assert len(BY_KEY) == len(ALL)  # no two extractors share a key
    assert BY_KEY[extractor_for("app/models.py").key] is PYTHON


def test_a_process_returns_the_facts_the_worker_would_have_parsed():
    work = [(PYTHON, f"import os\nfrom pkg import mod{i}\n".encode()) for i in range(8)]
    with Parsers(2, shared_from=1) as parsers:
        texts = parsers.facts(work)
        assert parsers.started == 2
    assert texts == [facts_of(extractor.key, data) for extractor, data in work]


def test_a_parsing_process_that_dies_fails_the_attempt_with_a_retryable_error():
    with Parsers(2, function=_dies, shared_from=1) as parsers:
        with pytest.raises(ParseProcessFailed) as failed:
            parsers.facts([(PYTHON, b"")] * 4)
    assert failed.value.retryable
    assert failed.value.code == "RI-JOB-FAILED"
    assert not multiprocessing.active_children()


def test_a_cancellation_stops_the_parsing_part_way_and_leaves_no_process_behind():
    seen = []

    def check():
        seen.append(1)
        if len(seen) > 2:
            raise JobCancelled()

    parsers = Parsers(2, shared_from=1)
    try:
        with pytest.raises(JobCancelled):
            parsers.facts([(PYTHON, b"import os\n")] * 64, check)
        assert len(multiprocessing.active_children()) >= 2  # still started: closing them is the stage's to do
    finally:
        parsers.close()
    assert len(seen) == 3
    assert not multiprocessing.active_children()


def test_the_parsing_processes_exit_when_the_worker_is_killed(tmp_path):
    script = tmp_path / "worker.py"
    script.write_text(
        "import multiprocessing, sys\n"
        "from analysis_jobs.pipeline.extractors import PYTHON\n"
        "from analysis_jobs.pipeline.parsing import Parsers\n"
        "if __name__ == '__main__':\n"
        "    parsers = Parsers(2, shared_from=1)\n"
        "    parsers.facts([(PYTHON, b'import os\\n')] * 8)\n"
        "    print(*(child.pid for child in multiprocessing.active_children()), flush=True)\n"
        "    sys.stdin.read()\n"
    )
    worker = subprocess.Popen([sys.executable, str(script)], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        children = [int(pid) for pid in worker.stdout.readline().split()]
        assert len(children) >= 2  # the two parsing processes (and spawn's resource tracker)
        assert all(_alive(pid) for pid in children)
        worker.send_signal(signal.SIGKILL)
        worker.wait()
        deadline = time.monotonic() + 30
        while any(_alive(pid) for pid in children) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not [pid for pid in children if _alive(pid)]
    finally:
        worker.kill()
        worker.wait()


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (an exited process no one has reaped yet is a zombie: it does not)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rpartition(")")[2].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_the_number_of_processes_comes_from_settings(settings):
    settings.ANALYSIS_JOBS = {**settings.ANALYSIS_JOBS, "EXTRACT_PROCESSES": 3}
    assert PipelineConfig.from_settings().extract_processes == 3
    assert PipelineConfig().extract_processes == 1  # parsed in the worker's own process unless asked
