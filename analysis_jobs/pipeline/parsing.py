"""
Where an analysis parses the files it reads: in the worker's own process, or spread over processes of its own.

Parsing is most of what a big analysis costs, and tree-sitter holds the interpreter's lock while it parses, so
threads would not share it out: with ``ANALYSIS_EXTRACT_PROCESSES`` above 1, a worker starts that many processes
the first time a batch has enough files to parse, and stops them when the extract stage ends. What crosses to
them is an extractor's key and a file's bytes; what comes back is the facts' text, the same text either way.
"""

import gc
import multiprocessing
import multiprocessing.connection
import os
import signal
import threading
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from ..exceptions import AnalysisError
from .extractors import BY_KEY, run_extractor
from .extractors.base import Extractor
from .records import facts_text

# A batch with fewer files to parse is parsed in the worker's process: starting the processes (about a quarter of
# a second each, to import the grammars) costs more than a small batch's parse.
SHARED_FROM = 64


class ParseProcessFailed(AnalysisError):
    """A process parsing the source's files died before it finished (a crash in a grammar, or killed)."""


def facts_of(key: str, data: bytes) -> str:
    """Return the facts text of ``data`` as the extractor ``key`` reads it: what a parsing process sends back."""
    return facts_text(run_extractor(BY_KEY[key], data))


def _start_parsing_process() -> None:
    # The worker decides when the work stops: a Ctrl-C or a SIGTERM sent to the whole process group reaches it,
    # and it stops these processes when it is done with them. If it dies first (kill -9), nothing would tell
    # them (each holds its own end of the queue they wait on), so each watches it and exits with it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    threading.Thread(target=_exit_with, args=(multiprocessing.parent_process().sentinel,), daemon=True).start()
    gc.freeze()  # the imported modules: the collector need not scan them again for each file's garbage


def _exit_with(parent_sentinel) -> None:
    multiprocessing.connection.wait([parent_sentinel])
    os._exit(1)


class Parsers:
    """Turn ``(extractor, bytes)`` pairs into facts texts, in order: over ``processes`` processes when there are enough.

    ``function`` is what each pair is given to (``facts_of``; a module-level function, as it is sent to the
    processes by name). ``started`` counts the processes started, for the stats.
    """

    def __init__(self, processes: int, *, function=facts_of, shared_from: int | None = None):
        self.processes = processes
        self.function = function
        self.shared_from = SHARED_FROM if shared_from is None else shared_from
        self.started = 0
        self._pool = None

    def __enter__(self) -> "Parsers":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def facts(self, work: list[tuple[Extractor, bytes]], check=lambda: None) -> list[str]:
        """Return the facts text of each pair of ``work``, calling ``check`` before each file is parsed here or
        as each file's facts come back from a process (so a cancellation stops the parsing part-way)."""
        return self.start(work, check).texts()

    def start(self, work: list[tuple[Extractor, bytes]], check=lambda: None) -> "Parsing":
        """Start parsing ``work`` and return it in progress: the processes parse it while the worker goes on (to
        read the next batch) until it asks for the ``texts``. In the worker's own process it is parsed at once,
        as nothing else could run meanwhile."""
        if self.processes < 2 or len(work) < self.shared_from:
            texts = []
            for extractor, data in work:
                check()
                texts.append(self.function(extractor.key, data))
            return Parsing(texts)
        if self._pool is None:
            # Spawned, not forked: the worker has threads (its heartbeat) and database connections to leave behind.
            self._pool = ProcessPoolExecutor(self.processes, multiprocessing.get_context("spawn"), _start_parsing_process)
            self.started = self.processes
        keys, datas = [extractor.key for extractor, _ in work], [data for _, data in work]
        try:
            coming = self._pool.map(self.function, keys, datas, chunksize=max(1, len(work) // (4 * self.processes)))
        except BrokenProcessPool as error:
            raise ParseProcessFailed() from error
        return Parsing(coming, len(work), check)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


class Parsing:
    """The facts texts of a batch, in its order: parsed already, or ``count`` of them coming back from the
    processes, ``check`` called before each is waited for."""

    def __init__(self, texts, count: int | None = None, check=lambda: None):
        self._texts, self._count, self._check = texts, count, check

    def texts(self) -> list[str]:
        if self._count is None:
            return self._texts
        texts = []
        try:
            for _ in range(self._count):
                self._check()
                texts.append(next(self._texts))
        except BrokenProcessPool as error:
            raise ParseProcessFailed() from error
        return texts
