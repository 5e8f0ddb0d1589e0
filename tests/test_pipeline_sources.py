"""Sources: exclusions, safety rules, budgets, odd names and contents, and git revisions read from the object store."""

import hashlib
import os
import shutil
import threading
import time
from types import SimpleNamespace

import pathspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from analysis_jobs.exceptions import ResourceExceeded, RevisionNotFound, SourceNotFound
from analysis_jobs.pipeline import sources
from analysis_jobs.pipeline.sources import DirectorySource, Exclusions, GitSource, _Rules, is_unsafe, resolve_revision
from analysis_jobs.pipeline.repository import MemoryFactsCache
from tests.pipeline_support import analyse, commit_tree, git, write_tree


def files(result):
    return sorted(node_id[5:] for node_id in result.of_kind("file"))


def test_default_and_gitignore_exclusions_skip_vendored_generated_and_ignored_paths(tmp_path):
    root = write_tree(tmp_path / "r", {
        "app.py": "",
        "node_modules/left-pad/index.js": "",
        "web/node_modules/x.js": "",
        "build/out.py": "",
        "pkg/__pycache__/app.cpython-311.pyc": b"\0",
        "env/pyvenv.cfg": "home = /usr\n",
        "env/lib/site.py": "",
        ".gitignore": "*.log\nsecret/\n!keep.log\n",
        "a.log": "",
        "keep.log": "",
        "secret/key.txt": "",
        "docs/.gitignore": "draft.md\n",
        "docs/draft.md": "",
        "docs/final.md": "",
        "draft.md": "",
    })
    result = analyse(root)
    assert files(result) == [".gitignore", "app.py", "docs/.gitignore", "docs/final.md", "draft.md", "keep.log"]


def test_a_gitignore_pattern_git_cannot_match_is_skipped_as_git_skips_it(tmp_path):
    # black's test data holds a .gitignore of "!" alone; pathspec refuses it, and it failed the whole analysis.
    root = write_tree(tmp_path / "r", {
        ".gitignore": "!\n*.log\ncache\\\n", "a.log": "", "b.txt": "", "cache": "", "cache\\": "",
    })
    git(root, "init", "-q")
    ignored = git(root, "status", "--porcelain", "--ignored", "-z").split("\0")
    assert "!! a.log" in ignored and "?? cache\\" in ignored  # git: "!" and the trailing backslash match nothing
    assert files(analyse(root)) == [".gitignore", "b.txt", "cache", "cache\\"]


def test_gitignore_can_be_turned_off_and_the_defaults_replaced(tmp_path):
    root = write_tree(tmp_path / "r", {".gitignore": "*.log\n", "a.log": "", "node_modules/x.js": "", "b.tmp": ""})
    result = analyse(root, exclude=("*.tmp",), honour_gitignore=False)
    assert files(result) == [".gitignore", "a.log", "node_modules/x.js"]


def test_a_symlink_is_never_followed_in_or_out_of_the_source(tmp_path):
    outside = write_tree(tmp_path / "outside", {"secret.py": "import hidden_dependency\n"})
    root = write_tree(tmp_path / "r", {"real.py": "import os\n"})
    os.symlink(outside / "secret.py", root / "escape.py")
    os.symlink(outside, root / "escape_dir")
    os.symlink("real.py", root / "alias.py")
    result = analyse(root)
    assert files(result) == ["real.py"]
    assert "dep:pypi:hidden-dependency" not in result.nodes
    codes = {node["attrs"]["code"]: [] for node in result.of_kind("diagnostic").values()}
    for node in result.of_kind("diagnostic").values():
        codes[node["attrs"]["code"]].append(node["evidence"][0]["path"])
    assert codes == {"symlink-escapes-source": ["escape.py", "escape_dir"], "symlink-not-followed": ["alias.py"]}
    assert str(tmp_path) not in result.text  # no absolute path anywhere in the facts


def finishes(work, fifo):
    """Run ``work`` in a thread and return whether it finished, opening ``fifo`` to write to free it if not."""
    done = threading.Event()

    def run():
        try:
            work()
        finally:
            done.set()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout=30)  # a bound on failure only: a fixed read returns at once
    finished = done.is_set()
    if not finished:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # the reader is waiting, so this opens, then EOF
        thread.join()
    return finished


def test_a_gitignore_or_file_that_is_a_fifo_is_not_waited_on(tmp_path):
    root = write_tree(tmp_path / "r", {"app.py": "import os\n", "later.py": ""})
    os.mkfifo(root / ".gitignore")
    results = []
    assert finishes(lambda: results.append(analyse(root)), root / ".gitignore")
    assert files(results[0]) == ["app.py", "later.py"]

    os.remove(root / ".gitignore")
    source = DirectorySource(str(root), Exclusions([]))
    entries = [entry for entry in source.entries() if entry.kind == "file"]
    os.remove(root / "later.py")
    os.mkfifo(root / "later.py")  # swapped for a FIFO between the walk and the read
    read = []
    assert finishes(lambda: read.extend(source.read(entries, 100)), root / "later.py")
    assert [(entry.path, data) for entry, data in read] == [("app.py", b"import os\n"), ("later.py", None)]


def test_a_gitignore_that_is_a_symlink_is_not_read_in_a_directory_or_a_revision(tmp_path):
    root = write_tree(tmp_path / "repo", {"app.py": "", "rules": "*.py\n"})
    os.symlink("rules", root / ".gitignore")  # git ignores it; followed, it would drop app.py; parsed, "rules"
    directory = analyse(root)
    assert files(directory) == ["app.py", "rules"]
    revision = analyse(root, commit=commit_tree(root))
    assert files(revision) == ["app.py", "rules"]
    assert revision.hash == directory.hash


def test_absolute_and_dot_dot_paths_are_unsafe():
    assert is_unsafe(b"/etc/passwd") and is_unsafe(b"a/../../b") and is_unsafe(b"./a") and is_unsafe(b"a//b")
    assert not is_unsafe(b"a/b.py") and not is_unsafe(b"..a/b")


def test_binary_files_are_listed_not_parsed_and_oversized_files_are_not_read(tmp_path):
    root = write_tree(tmp_path / "r", {"image.py": b"\x89PNG\0\0\0", "big.py": "x = 1\n" * 100, "small.py": "import os\n"})
    result = analyse(root, max_file_bytes=100)
    assert result.nodes["file:image.py"]["attrs"]["binary"] is True
    assert "mod:py:image" not in result.nodes
    big = result.nodes["file:big.py"]["attrs"]
    assert (big["skipped"], big["sha256"], big["size"]) == ("too-large", "", 600)
    assert "diag:file-too-large:big.py" in result.nodes
    assert result.nodes["mod:py:big"]["evidence"][0]["extractor"].startswith("inventory@")  # a module, unread
    assert result.stats["read"] == 2


def test_non_utf8_names_and_contents_are_handled(tmp_path):
    root = tmp_path / "r"
    root.mkdir()
    (root / os.fsdecode(b"caf\xe9.py")).write_bytes(b"x = '\xff'\n")
    (root / "na\u0303o.py").write_text("import os\n")  # decomposed: stored NFC in the facts
    (root / "latin.py").write_bytes(b"# -*- coding: latin-1 -*-\nname = '\xe9'\n")
    result = analyse(root)
    assert files(result) == ["caf\\xe9.py", "latin.py", "n\u00e3o.py"]
    assert "diag:parse-error:caf\\xe9.py" in result.nodes
    assert "diag:parse-error:latin.py" not in result.nodes
    result.text.encode("utf-8")  # valid UTF-8 throughout


def test_the_file_budget_fails_the_job_for_good(tmp_path):
    root = write_tree(tmp_path / "r", {f"f{index}.txt": "" for index in range(5)})
    with pytest.raises(ResourceExceeded, match="ANALYSIS_MAX_FILES") as raised:
        analyse(root, max_files=4)
    assert (raised.value.code, raised.value.retryable) == ("RI-RESOURCE-EXCEEDED", False)
    assert analyse(root, max_files=5).summary["files"] == 5


def test_the_byte_budget_counts_the_whole_source(tmp_path):
    root = write_tree(tmp_path / "r", {"a.txt": "x" * 60, "b.txt": "x" * 60})
    with pytest.raises(ResourceExceeded, match="ANALYSIS_MAX_TOTAL_BYTES"):
        analyse(root, max_total_bytes=100)
    assert analyse(root, max_total_bytes=120).summary["bytes"] == 120


def test_the_time_budget_is_measured_on_the_injected_clock(tmp_path):
    root = write_tree(tmp_path / "r", {f"f{index}.py": "" for index in range(3)})
    ticks = iter(range(0, 1000, 10))  # each reading of the clock is 10 s later
    with pytest.raises(ResourceExceeded, match="ANALYSIS_MAX_SECONDS"):
        analyse(root, monotonic=lambda: next(ticks), max_seconds=25)


def test_a_missing_source_or_a_file_is_refused(tmp_path):
    with pytest.raises(SourceNotFound, match="does not exist"):
        analyse(tmp_path / "nowhere")
    (tmp_path / "file.txt").write_text("")
    with pytest.raises(SourceNotFound, match="not a directory"):
        analyse(tmp_path / "file.txt")


# -- git revisions ---------------------------------------------------------------------------------------------


@pytest.fixture
def repository(tmp_path):
    root = write_tree(tmp_path / "repo", {"app.py": "import requests\n", "lib/util.py": "def f():\n    pass\n", ".gitignore": "*.log\n"})
    first = commit_tree(root)
    write_tree(root, {"app.py": "import httpx\n", "new.py": ""})
    second = commit_tree(root)
    return root, first, second


def test_a_revision_resolves_to_its_commit_and_unknown_ones_are_refused(repository, tmp_path):
    root, first, second = repository
    assert resolve_revision(str(root), "HEAD") == second
    assert resolve_revision(str(root), "HEAD~1") == first
    assert resolve_revision(str(root / "lib"), first[:10]) == first
    with pytest.raises(RevisionNotFound, match="names no commit"):
        resolve_revision(str(root), "no-such-branch")
    with pytest.raises(RevisionNotFound):
        resolve_revision(str(root), "--output=/tmp/x")  # an option is never passed through to git
    plain = write_tree(tmp_path / "plain", {"a.py": ""})
    with pytest.raises(SourceNotFound, match="not a git repository"):
        resolve_revision(str(plain), "HEAD")
    write_tree(root, {"added/later.py": ""})  # in the work tree, in no commit yet
    with pytest.raises(RevisionNotFound, match=f"is not a folder in the commit {second[:12]} that 'HEAD' names"):
        resolve_revision(str(root / "added"), "HEAD")


def test_a_revision_that_resolves_costs_one_git_process_and_a_tag_resolves_to_its_commit(repository, monkeypatch):
    root, first, _ = repository
    git(root, "tag", "-a", "-m", "v1", "v1", first)
    runs = []
    real = sources._git
    monkeypatch.setattr(sources, "_git", lambda *args, **kwargs: runs.append(args) or real(*args, **kwargs))
    assert resolve_revision(str(root / "lib"), "v1") == first  # the annotated tag's commit, not the tag object
    assert len(runs) == 1
    with pytest.raises(RevisionNotFound, match="names no commit"):
        resolve_revision(str(root), "no-such-tag")
    assert len(runs) > 2  # a failure is looked into, to say why


def test_a_revision_is_read_from_the_object_store_without_touching_the_work_tree(repository):
    root, first, second = repository
    write_tree(root, {"app.py": "import django\n", "dirty.py": "", "x.log": ""})
    status = git(root, "status", "--porcelain")
    old = analyse(root, commit=first)
    assert files(old) == [".gitignore", "app.py", "lib/util.py"]
    assert old.targets("mod:py:app", "imports") == ["dep:pypi:requests"]
    assert files(analyse(root, commit=second)) == [".gitignore", "app.py", "lib/util.py", "new.py"]
    assert git(root, "status", "--porcelain") == status  # work tree and index as they were
    assert (root / "app.py").read_text() == "import django\n"


def test_a_subfolder_of_a_repository_is_read_at_the_revision(repository):
    root, first, _ = repository
    result = analyse(root / "lib", commit=first)
    assert files(result) == ["util.py"]


def _blobs(root, commit, paths):
    """Return the ``(path, bytes)`` a revision's source gives for ``paths``, in order."""
    source = GitSource(str(root), commit, Exclusions(()))
    try:
        entries = {entry.path: entry for entry in source.entries()}
        return [(entry.path, data) for entry, data in source.read([entries[path] for path in paths], 1 << 20)]
    finally:
        source.close()


def test_a_revision_is_read_a_window_of_objects_at_a_time_each_answer_to_its_own_file(tmp_path, monkeypatch):
    monkeypatch.setattr(sources, "REQUESTS_AHEAD", 3)
    contents = {f"m{index}.py": f"VALUE = {index}\n" * (index + 1) for index in range(8)}
    root = write_tree(tmp_path / "many", contents)
    commit = commit_tree(root)
    paths = sorted(contents)
    assert _blobs(root, commit, paths) == [(path, contents[path].encode()) for path in paths]


def test_a_read_left_half_way_does_not_hand_its_unread_answers_to_the_next_one(tmp_path, monkeypatch):
    monkeypatch.setattr(sources, "REQUESTS_AHEAD", 4)
    contents = {f"f{index}.txt": f"file {index}\n" for index in range(6)}
    root = write_tree(tmp_path / "half", contents)
    commit = commit_tree(root)
    source = GitSource(str(root), commit, Exclusions(()))
    try:
        entries = list(source.entries())
        reading = source.read(entries, 1 << 20)
        assert next(reading)[1] == b"file 0\n"
        reading.close()  # three answers of this window were never read
        assert [data for _, data in source.read(entries[4:], 1 << 20)] == [b"file 4\n", b"file 5\n"]
    finally:
        source.close()


def test_a_directory_and_the_revision_holding_the_same_files_give_the_same_hash(repository, tmp_path):
    root, _, second = repository
    clean = write_tree(tmp_path / "copy", {
        "app.py": "import httpx\n", "lib/util.py": "def f():\n    pass\n", ".gitignore": "*.log\n", "new.py": "", "ignored.log": "x",
    })
    assert analyse(clean).hash == analyse(root, commit=second).hash


def test_exclusions_apply_alike_to_a_revision(tmp_path):
    root = write_tree(tmp_path / "repo", {"a.py": "", "node_modules/m.js": "", "sub/.gitignore": "gen.py\n", "sub/gen.py": ""})
    commit = commit_tree(root)
    assert files(analyse(root, commit=commit)) == ["a.py", "sub/.gitignore"]


def test_only_a_file_named_pyvenv_cfg_makes_a_virtual_environment(tmp_path):
    root = write_tree(tmp_path / "repo", {"tools/mypyvenv.cfg": "", "tools/run.py": "", "env/pyvenv.cfg": "", "env/site.py": ""})
    revision = analyse(root, commit=commit_tree(root))
    assert files(revision) == ["tools/mypyvenv.cfg", "tools/run.py"]
    assert revision.hash == analyse(root).hash


def test_exclusion_rules_follow_gitignore_precedence():
    rules = Exclusions(["build/", "*.tmp"])
    rules.add_gitignore("", b"!keep.tmp\n")
    rules.add_gitignore("a", b"*.py\n!main.py\n")
    assert rules.excluded("build", True) and not rules.excluded("build", False)
    assert rules.excluded("x.tmp", False) and not rules.excluded("keep.tmp", False)
    assert rules.excluded("a/x.py", False) and not rules.excluded("a/main.py", False) and not rules.excluded("b/x.py", False)


PATTERNS = ["build/", "*.pyc", "/dist", "docs/*.md", "**/gen/", "node_modules/", "a/b", "*.egg-info/", "x?", "[ab]c/"]
PARTS = ["a", "b", "ac", "bc", "build", "dist", "docs", "gen", "node_modules", "x1", "m.py", "m.pyc", "r.md", "p.egg-info"]


@given(
    st.lists(st.sampled_from(PATTERNS), min_size=1, max_size=6),
    st.lists(st.sampled_from(PARTS), min_size=1, max_size=5),
    st.booleans(),
)
def test_the_one_regex_fast_path_agrees_with_pathspec(patterns, parts, is_dir):
    rules = _Rules(patterns)
    probe = "/".join(parts) + ("/" if is_dir else "")
    assert rules.combined is not None
    assert rules.verdict(probe) == pathspec.GitIgnoreSpec.from_lines(patterns).check_file(probe).include


def test_a_blob_seen_before_is_not_read_again_and_its_facts_are_parsed_if_they_were_lost(repository):
    root, first, second = repository
    write_tree(root, {"copy.py": "def f():\n    pass\n"})  # the same blob as lib/util.py
    second = commit_tree(root)
    cache = MemoryFactsCache()
    before = analyse(root, commit=first, cache=cache)
    assert (before.stats["read"], before.stats["remembered"]) == (3, 0)
    after = analyse(root, commit=second, cache=cache)
    assert (after.stats["read"], after.stats["remembered"], after.stats["parsed"]) == (2, 3, 2)  # app.py, new.py
    assert after.hash == analyse(root, commit=second).hash

    cache.entries.clear()  # digests kept, facts gone (as when an extractor's version changes)
    again = analyse(root, commit=second, cache=cache)
    assert (again.stats["read"], again.stats["remembered"], again.stats["parsed"]) == (4, 5, 3)
    assert again.hash == after.hash


LONG_AGO_NS = 1_700_000_000 * 10**9  # a file time long before any test runs


def later():
    """Return a wall clock far enough ahead that every file written so far is settled."""
    return time.time_ns() + 3 * DirectorySource.SETTLE_NS


def settle(root, *paths, at=LONG_AGO_NS):
    """Set the modification time of ``paths`` under ``root`` to ``at``, as a file edited long ago has it."""
    for path in paths:
        os.utime(root / path, ns=(at, at))


def test_a_directory_file_left_alone_is_not_read_again_and_one_written_since_is(tmp_path):
    root = write_tree(tmp_path / "tree", {"a.py": "x = 1\n", "b.txt": "b\n"})
    settle(root, "a.py", "b.txt")
    cache = MemoryFactsCache()
    first = analyse(root, cache=cache, time_ns=later)
    assert (first.stats["read"], first.stats["remembered"], len(cache.digests)) == (2, 0, 2)

    write_tree(root, {"a.py": "x = 2\n"})  # the same size, in the same inode
    settle(root, "a.py", at=LONG_AGO_NS + 1)
    again = analyse(root, cache=cache, time_ns=later)
    assert (again.stats["read"], again.stats["remembered"], len(cache.digests)) == (1, 1, 3)
    assert again.nodes["file:a.py"]["attrs"]["sha256"] == hashlib.sha256(b"x = 2\n").hexdigest()
    assert again.hash == analyse(root).hash  # what reading every file gives


def test_a_directory_file_replaced_by_another_with_the_same_size_and_times_is_read(tmp_path):
    root = write_tree(tmp_path / "tree", {"a.py": "x = 1\n", "swap.py": "y = 2\n"})
    settle(root, "a.py", "swap.py")
    cache = MemoryFactsCache()
    analyse(root, cache=cache, time_ns=later)
    os.replace(root / "swap.py", root / "a.py")  # another inode, as an editor's save-by-rename leaves it
    again = analyse(root, cache=cache, time_ns=later)
    assert (again.stats["read"], again.stats["remembered"]) == (1, 0)
    assert again.nodes["file:a.py"]["attrs"]["sha256"] == hashlib.sha256(b"y = 2\n").hexdigest()


def test_a_directory_file_changed_within_the_settle_window_is_read_every_time(tmp_path):
    root = write_tree(tmp_path / "tree", {"a.py": "x = 1\n", "b.txt": "b\n"})  # changed just now
    cache = MemoryFactsCache()
    for _ in range(2):
        result = analyse(root, cache=cache, time_ns=time.time_ns)
        assert (result.stats["read"], result.stats["remembered"], cache.digests) == (2, 0, {})
    settle(root, "a.py")  # the modification time is old, but the change time says a.py was touched just now
    assert analyse(root, cache=cache, time_ns=time.time_ns).stats["read"] == 2
    assert cache.digests == {}


def test_a_stamp_names_the_path_device_inode_size_and_both_times(tmp_path):
    source = DirectorySource(str(tmp_path), Exclusions(()), time_ns=later)
    list(source.entries())
    fields = dict(st_dev=1, st_ino=2, st_size=3, st_mtime_ns=4, st_ctime_ns=5)
    stamp = source._stamp(b"/r/a.py", SimpleNamespace(**fields))
    assert stamp != source._stamp(b"/r/b.py", SimpleNamespace(**fields))
    for name in fields:
        assert source._stamp(b"/r/a.py", SimpleNamespace(**{**fields, name: fields[name] + 1})) != stamp, name


def test_a_directory_file_whose_facts_were_lost_is_read_and_hashed_again(tmp_path):
    root = write_tree(tmp_path / "tree", {"a.py": "import os\n", "b.txt": "b\n"})
    settle(root, "a.py", "b.txt")
    cache = MemoryFactsCache()
    before = analyse(root, cache=cache, time_ns=later)
    cache.entries.clear()  # digests kept, facts gone (as when an extractor's version changes)
    after = analyse(root, cache=cache, time_ns=later)
    assert (after.stats["read"], after.stats["remembered"], after.stats["parsed"]) == (1, 1, 1)  # a.py
    assert after.hash == before.hash


def test_a_revision_is_read_as_its_objects_are_even_where_a_replace_ref_stands_in_for_one(repository, tmp_path):
    root, first, _ = repository
    original = git(root, "rev-parse", f"{first}:app.py")
    stand_in = git(root, "hash-object", "-w", str(write_tree(tmp_path / "other", {"app.py": "import django\n"}) / "app.py"))
    git(root, "replace", original, stand_in)
    cache = MemoryFactsCache()
    result = analyse(root, commit=first, cache=cache)
    assert result.targets("mod:py:app", "imports") == ["dep:pypi:requests"]  # what the commit holds
    assert cache.digests[original].sha256 == hashlib.sha256(b"import requests\n").hexdigest()


def test_a_revision_keeps_tracked_files_that_a_gitignore_pattern_matches(tmp_path):
    root = write_tree(tmp_path / "monorepo", {
        ".gitignore": "package.json\n!/package.json\n",  # a generated manifest, ignored, but one is committed
        "package.json": '{"name": "root", "workspaces": ["packages/*"]}\n',
        "packages/x/package.json": '{"name": "x"}\n',
        "packages/x/index.js": "",
    })
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "add", "-f", "packages/x/package.json")  # tracked although ignored
    git(root, "commit", "-q", "-m", "tracked")
    revision = analyse(root, commit=git(root, "rev-parse", "HEAD"))
    assert "packages/x/package.json" in files(revision)
    assert "packages/x/package.json" not in files(analyse(root))  # a directory keeps gitignore's semantics


def test_a_submodule_is_one_diagnostic_alike_in_a_directory_and_its_revision(tmp_path):
    library = write_tree(tmp_path / "library", {"lib.py": "import os\n"})
    commit_tree(library)
    root = write_tree(tmp_path / "app", {"app.py": "import json\n"})
    git(root, "init", "-q")
    git(root, "-c", "protocol.file.allow=always", "submodule", "-q", "add", str(library), "vendor/library")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "with a submodule")
    revision = analyse(root, commit=git(root, "rev-parse", "HEAD"))
    checked_out = analyse(root)
    assert "diag:submodule-not-read:vendor/library" in revision.nodes
    assert "file:vendor/library/lib.py" not in checked_out.nodes
    assert checked_out.hash == revision.hash
    shutil.rmtree(root / "vendor" / "library")  # a clone whose submodules were never initialised
    (root / "vendor" / "library").mkdir()
    assert analyse(root).hash == revision.hash


def test_a_missing_blob_is_a_diagnostic_and_the_rest_of_the_revision_is_analysed(tmp_path):
    root = write_tree(tmp_path / "repo", {"app.py": "import json\n", "lost.py": "import os\n"})
    commit = commit_tree(root)
    lost = git(root, "rev-parse", f"{commit}:lost.py")
    (root / ".git" / "objects" / lost[:2] / lost[2:]).unlink()  # a damaged or partial object store
    result = analyse(root, commit=commit)
    assert result.nodes["diag:file-unreadable:lost.py"]["attrs"]["code"] == "file-unreadable"
    assert result.targets("mod:py:app", "imports") == ["std:py:json"]
