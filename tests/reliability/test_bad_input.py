"""
The bad-input table: every bad input we know of, and what the user gets. A command refuses with a one-line
message and a non-zero exit and queues nothing; a bad file inside a good source does not fail the job, which
completes and records a diagnostic. README.md's table lists the same rows.
"""

import io
import json
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from analysis_jobs.control_plane import DatabaseControlPlane
from analysis_jobs.models import AnalysisJob, JobStatus
from analysis_jobs.pipeline.sources import Exclusions, open_source

from .harness import ROOT, make_source

SECRET = "hunter2-do-not-log"


def _git_repository(root: Path) -> Path:
    root.mkdir()
    make_source(root)
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.org", GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.org")
    for argv in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "first"]):
        subprocess.run(["git", "-C", str(root), *argv], check=True, env=env, capture_output=True)
    return root


def _cases(tmp_path: Path, db_env: dict) -> list[tuple[str, list[str], dict, str]]:
    """Return (what, argv, extra environment, what the message must say) for every refused input."""
    plain = make_source(tmp_path / "plain")
    a_file = plain / "m0000.py"
    repository = _git_repository(tmp_path / "repository")
    uncommitted = make_source(repository / "uncommitted")  # a folder the commit does not hold
    not_utf8 = os.fsdecode(os.fsencode(str(tmp_path)) + b"/caf\xe9")
    os.mkdir(not_utf8)
    too_long = tmp_path / "/".join(["d" * 200] * 6)
    too_long.mkdir(parents=True)
    empty_db = f"sqlite:///{tmp_path / 'unmigrated.sqlite3'}"
    not_utf8_list = tmp_path / "paths.txt"
    not_utf8_list.write_bytes(f"{plain}\n".encode() + b"caf\xe9\n")
    return [
        ("missing source", ["enqueue_analysis", str(tmp_path / "nope")], {}, "no such file or directory; nothing was queued"),
        ("source is a file", ["enqueue_analysis", str(a_file)], {}, "not a directory; nothing was queued"),
        ("no source at all", ["enqueue_analysis"], {}, "Give at least one PATH"),
        ("source path not UTF-8", ["enqueue_analysis", not_utf8], {}, "the path is not valid UTF-8"),
        ("source path too long", ["enqueue_analysis", str(too_long)], {}, "longer than 1024 characters"),
        ("--from-file not UTF-8", ["enqueue_analysis", "--from-file", str(not_utf8_list)], {}, "the list of paths is not UTF-8 text"),
        ("--from-file missing", ["enqueue_analysis", "--from-file", str(tmp_path / "no-list")], {}, "cannot read the list of paths"),
        ("unknown revision", ["enqueue_analysis", str(repository), "--revision", "no-such-branch"], {}, "names no commit"),
        ("folder not in the revision", ["enqueue_analysis", str(uncommitted), "--revision", "HEAD"], {}, "is not a folder in the commit"),
        ("revision of a non-repository", ["enqueue_analysis", str(plain), "--revision", "main"], {}, "is not a git repository"),
        ("unknown owner", ["enqueue_analysis", str(plain), "--owner", "ghost"], {}, "No user is called 'ghost'"),
        ("--wait with two paths", ["enqueue_analysis", str(plain), str(repository), "--wait"], {}, "--wait follows one job"),
        ("--max-attempts 0", ["enqueue_analysis", str(plain), "--max-attempts", "0"], {}, "must be at least 1"),
        ("--max-attempts abc", ["enqueue_analysis", str(plain), "--max-attempts", "abc"], {}, "is not a whole number"),
        ("--max-attempts past 32 bits", ["enqueue_analysis", str(plain), "--max-attempts", "99999999999"], {}, "must be at most 2147483647"),
        ("--lease-seconds 0", ["runworker", "--burst", "--lease-seconds", "0"], {}, "must be more than 0"),
        ("--lease-seconds 1e12", ["runworker", "--burst", "--lease-seconds", "1e12"], {}, "must be at most 604800 seconds"),
        ("--poll-interval -1", ["runworker", "--burst", "--poll-interval", "-1"], {}, "must be a finite number of seconds"),
        ("--grace nan", ["runworker", "--burst", "--grace", "nan"], {}, "must be a finite number of seconds"),
        ("--concurrency 0", ["runworker", "--burst", "--concurrency", "0"], {}, "must be at least 1"),
        ("--older-than -1", ["prune_analysis_cache", "--older-than", "-1"], {}, "must be a number of days from 0 to 36500"),
        ("unknown job id", ["analysis_status", "999999"], {}, "No job with id 999999"),
        ("job id not a number", ["analysis_status", "abc"], {}, "is not a job id"),
        ("cancel an unknown job", ["cancel_analysis", "999999"], {}, "Job 999999 does not exist"),
        ("job id 0", ["cancel_analysis", "0"], {}, "ids start at 1"),
        ("job id past 64 bits", ["analysis_status", "99999999999999999999"], {}, "ids are at most 9223372036854775807"),
        ("show a job id past 64 bits", ["show_analysis", "99999999999999999999"], {}, "ids are at most"),
        ("DATABASE_URL unknown scheme", ["analysis_status"], {"DATABASE_URL": "foo://x"}, "unsupported engine"),
        ("DATABASE_URL not a URL", ["analysis_status"], {"DATABASE_URL": f"postgres://u:{SECRET}@h:port/db"}, "not a valid database URL"),
        ("database unreachable", ["analysis_status"], {"DATABASE_URL": f"postgres://u:{SECRET}@127.0.0.1:1/db"}, "Cannot reach the postgresql database"),
        ("database not migrated", ["analysis_status"], {"DATABASE_URL": empty_db}, "not migrated: run `python manage.py migrate`"),
        ("worker on an unmigrated database", ["runworker", "--burst"], {"DATABASE_URL": empty_db}, "not migrated"),
    ]


def _check(what, code, text, expected, problems):
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith((" ", "usage:"))]
    if code == 0:
        problems.append(f"{what}: exit status 0")
    if expected not in text:
        problems.append(f"{what}: message does not say {expected!r}: {text[-500:]!r}")
    if "Traceback" in text:
        problems.append(f"{what}: a traceback instead of a message: {text[-800:]!r}")
    if SECRET in text:
        problems.append(f"{what}: the database password is in the output")
    if len(lines) > 1:
        problems.append(f"{what}: more than one line of message: {lines!r}")


@pytest.mark.process
def test_every_bad_input_is_refused_with_a_clear_message_and_changes_nothing(worker_env, manage_py, tmp_path):
    survivor, _ = DatabaseControlPlane().enqueue(str(make_source(tmp_path / "survivor")))
    before = list(AnalysisJob.objects.values())
    cases = _cases(tmp_path, worker_env)
    # A different DATABASE_URL needs a fresh process (settings are read once); so do two samples that show
    # the exit status a message comes with (CommandError: 1, an argparse error: 2). The rest run in-process,
    # where Django turns both into a CommandError, which is what a non-zero exit is made of.
    in_process = [case for case in cases if not case[2]]
    samples = ("missing source", "--max-attempts 0")
    in_processes = [case for case in cases if case[2] or case[0] in samples]
    running = [
        (what, expected, subprocess.Popen(
            [*manage_py, *argv], env=dict(worker_env, **extra), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        ))
        for what, argv, extra, expected in in_processes
    ]
    problems = []
    for what, argv, _, expected in in_process:
        out, err = io.StringIO(), io.StringIO()
        try:
            call_command(*argv, stdout=out, stderr=err)
        except CommandError as error:
            _check(what, 1, f"{error}\n{err.getvalue()}", expected, problems)
        else:
            problems.append(f"{what}: accepted")
    for what, expected, process in running:
        out, err = process.communicate(timeout=60)
        _check(what, process.returncode, (out + err).decode("utf-8", errors="replace"), expected, problems)
    assert problems == []
    assert list(AnalysisJob.objects.values()) == before, "a refused command changed the queue"
    assert survivor.pk in AnalysisJob.objects.values_list("pk", flat=True)


def _as_unprivileged(function):
    """Run ``function`` in a child process as ``nobody`` (root reads everything) and return what it returned."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.close(read)
            if os.geteuid() == 0:
                nobody = pwd.getpwnam("nobody")
                os.setgid(nobody.pw_gid)
                os.setuid(nobody.pw_uid)
            result = function()
        except BaseException as error:  # noqa: BLE001 - reported to the parent
            result = f"{error.__class__.__name__}: {error}"
        os.write(write, json.dumps(result).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        data = pipe.read()
    os.waitpid(pid, 0)
    return json.loads(data)


def test_an_unreadable_source_is_refused_by_the_command_and_by_the_pipeline():
    from analysis_jobs.management.commands.enqueue_analysis import Command

    # Outside pytest's own temporary folder, which only root may enter.
    parent = Path(tempfile.mkdtemp(prefix="partha-unreadable-"))
    parent.chmod(0o755)
    locked = make_source(parent / "locked")
    locked.chmod(0o000)
    try:
        command = _as_unprivileged(lambda: Command()._source(str(locked)))
        pipeline = _as_unprivileged(lambda: list(open_source(str(locked), "", Exclusions(())).entries()))
    finally:
        locked.chmod(0o755)
        shutil.rmtree(parent)
    assert command == f"CommandError: {locked}: permission denied; nothing was queued."
    assert pipeline.startswith("SourceNotFound: ") and "cannot be read" in pipeline


def _hostile_source(root: Path) -> Path:
    """A source with every awkward thing a file tree can hold."""
    make_source(root)
    (root / "loop").symlink_to("loop")
    (root / "self").symlink_to(".")
    (root / "escape").symlink_to("/etc/hostname")
    (root / "up").symlink_to("../..")
    (root / "binary.dat").write_bytes(bytes(range(256)) * 8)
    (root / "not-utf8-content.py").write_bytes(b"\xff\xfe = '\xe9'\n")
    with open(root / "huge.dat", "wb") as huge:
        huge.truncate(3 << 30)  # sparse: 3 GiB listed, never read
    raw = os.fsencode(str(root))
    with open(raw + b"/caf\xe9.py", "wb") as handle:
        handle.write(b"X = 1\n")
    os.mkdir(raw + b"/\xc3\x28dir")
    with open(raw + b"/\xc3\x28dir/inner.txt", "wb") as handle:
        handle.write(b"inner\n")
    return root


def test_awkward_files_do_not_fail_the_job_they_are_diagnosed(db, control_plane, make_worker, tmp_path):
    source = _hostile_source(tmp_path / "hostile")
    job, _ = control_plane.enqueue(str(source))
    worker = make_worker()
    lease = control_plane.claim_next("w")
    worker.run(lease)

    job.refresh_from_db()
    assert job.status == JobStatus.COMPLETED, (job.error_code, job.error_message)
    facts = job.snapshot.read_facts()
    nodes = json.loads(facts)["nodes"]
    files = {e["path"]: n for n in nodes if n["kind"] == "file" for e in n["evidence"]}
    diagnostics = {(n["attrs"]["code"], e["path"]) for n in nodes if n["kind"] == "diagnostic" for e in n["evidence"]}
    # Symlinks are never followed, whether they loop, point at the source itself or leave it.
    assert {"loop", "self", "escape", "up"} <= {path for _, path in diagnostics}
    assert ("symlink-escapes-source", "escape") in diagnostics
    assert "hostname" not in facts
    # A file over the size limit is listed with its size and not read.
    assert files["huge.dat"]["attrs"]["skipped"] == "too-large" and files["huge.dat"]["attrs"]["size"] == 3 << 30
    assert files["binary.dat"]["attrs"]["binary"] is True
    # Names that are not UTF-8 are shown escaped; contents that are not UTF-8 are a parse diagnostic, not a failure.
    assert "caf\\xe9.py" in files and "\\xc3(dir/inner.txt" in files
    assert ("parse-error", "not-utf8-content.py") in diagnostics
