"""
Where the bytes come from: a directory, or a git revision read from git's object store.

Both kinds list the same ``Entry`` values through the same exclusions and safety rules, so a directory and the
revision that holds the same files give the same inventory:

- paths are relative, ``/``-separated and NFC; a name that is not UTF-8 is shown with ``\\xNN`` escapes;
  an absolute path or one with an empty, ``.`` or ``..`` part is never read (``unsafe``);
- a symlink is never followed (``symlink``, with whether its target stays inside the source);
- gitignore-style patterns from the settings exclude paths in both; in a directory each ``.gitignore`` does too
  (the last matching pattern wins, as in git; one that is not a regular file is not read, as git does not),
  while a revision lists only tracked files, which git never ignores, so its ``.gitignore`` files are not read;
- a submodule is listed, never entered: in a revision its gitlink, in a directory a folder ``.gitmodules``
  names or that holds a ``.git`` of its own;
  a directory holding ``pyvenv.cfg`` is a virtual environment and skipped;
- a file is read only if it is still a regular file when opened, without blocking: never a FIFO or a device;
- each file has a stamp that names its bytes without reading them: the blob id in a revision, a digest of
  where the file is and what its inode says in a directory (``DirectorySource``).

A revision is read with ``git ls-tree`` and ``git cat-file --batch``; nothing is checked out, and the user's
work tree and index are never touched.
"""

import hashlib
import os
import posixpath
import re
import stat
import subprocess
import time
import unicodedata
from collections.abc import Iterable, Iterator
from contextlib import closing
from dataclasses import dataclass
from operator import attrgetter

import pathspec

from ..exceptions import RevisionNotFound, SourceNotFound

# No replace refs: an object id then always names the bytes read for it, which the blob digests rely on, and a
# commit is read as it was committed, not as a local `git replace` would show it.
GIT_ENV = {"GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", "GIT_OPTIONAL_LOCKS": "0", "GIT_NO_REPLACE_OBJECTS": "1"}
REQUESTS_AHEAD = 256  # object ids written to cat-file before reading answers: ~10 KiB, well within a pipe
ANY_DEPTH = "^(?:.+/)?"  # how pathspec's regex for a pattern with no inner slash opens
FILE_MODES = ("100644", "100755")  # a regular file in a git tree
NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0)
NO_BLOCK = getattr(os, "O_NONBLOCK", 0)


@dataclass(frozen=True, slots=True)
class Entry:
    path: str
    kind: str  # file | symlink | unsafe | submodule | special
    size: int = 0
    handle: object = None  # the absolute path (bytes) in a directory, the blob id in a revision
    inside: bool = True  # a symlink: whether its target stays within the source
    stamp: str = ""  # a file: what names its bytes without reading them (see the sources), or "" if nothing does


_name = attrgetter("name")


def display_path(raw: bytes) -> str:
    """Return the path shown in facts for the raw bytes of a relative path."""
    text = raw.decode("utf-8", errors="backslashreplace")
    return text if text.isascii() else unicodedata.normalize("NFC", text)


def is_named(raw: bytes, name: bytes) -> bool:
    """Return whether the relative path ``raw`` names a file called ``name`` (in any directory)."""
    return raw == name or raw.endswith(b"/" + name)


def is_unsafe(raw: bytes) -> bool:
    return raw.startswith(b"/") or any(part in (b"", b".", b"..") for part in raw.split(b"/"))


def symlink_stays_inside(link: str, target: bytes) -> bool:
    if target.startswith(b"/"):
        return False
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(link), display_path(target)))
    return resolved != ".." and not resolved.startswith("../")


def _matchable(line: str) -> bool:
    try:
        pathspec.GitIgnoreSpec.from_lines([line])
    except ValueError:
        return False
    return True


class _Rules:
    """One gitignore file's patterns (``pathspec``), with a one-regex fast path when none re-includes.

    Most patterns match at any depth, and their regexes all open with the same ``^(?:.+/)?``; the fast path
    opens with it once, so a path's slashes are tried once for all of them rather than once per pattern.
    """

    def __init__(self, lines: list[str], *, as_git: bool = False):
        """``as_git``: skip a pattern git cannot match (``!`` alone, a trailing ``\\``), as git does, not fail."""
        try:
            self.spec = pathspec.GitIgnoreSpec.from_lines(lines)
        except ValueError:
            if not as_git:
                raise
            self.spec = pathspec.GitIgnoreSpec.from_lines(line for line in lines if _matchable(line))
        patterns = [pattern for pattern in self.spec.patterns if pattern.include is not None and pattern.regex is not None]
        self.empty = not patterns
        self.combined = None
        if patterns and all(pattern.include for pattern in patterns):
            regexes = [pattern.regex.pattern.replace("(?P<ps_d>", "(") for pattern in patterns]
            deep = [regex[len(ANY_DEPTH):] for regex in regexes if regex.startswith(ANY_DEPTH)]
            alternatives = [f"(?:{regex})" for regex in regexes if not regex.startswith(ANY_DEPTH)]
            if deep:
                alternatives.append(f"(?:{ANY_DEPTH}(?:{'|'.join(deep)}))")
            self.combined = re.compile("|".join(alternatives))

    def verdict(self, probe: str) -> bool | None:
        """True: excluded; False: re-included by a ``!`` pattern; None: no pattern matches."""
        if self.combined is not None:
            return True if self.combined.match(probe) else None
        return self.spec.check_file(probe).include


class Exclusions:
    """The gitignore-style rules for one source: the configured patterns, then each ``.gitignore`` met."""

    def __init__(self, patterns: Iterable[str], *, honour_gitignore: bool = True):
        self.base = _Rules(list(patterns))
        self.honour_gitignore = honour_gitignore
        self.specs: dict[str, _Rules] = {}

    def add_gitignore(self, directory: str, data: bytes) -> None:
        if self.honour_gitignore:
            rules = _Rules(data.decode("utf-8", errors="replace").splitlines(), as_git=True)
            if not rules.empty:
                self.specs[directory] = rules

    def excluded(self, path: str, is_dir: bool) -> bool:
        """Return whether ``path`` is excluded, its parent directories being admitted."""
        suffix = "/" if is_dir else ""
        verdict = self.base.verdict(path + suffix)
        if self.specs:
            for directory, rules in self._applicable(path):
                relative = path[len(directory) + 1:] if directory else path
                include = rules.verdict(relative + suffix)
                if include is not None:
                    verdict = include
        return bool(verdict)

    def _applicable(self, path: str):
        parts = path.split("/")[:-1]
        prefixes = [""] + ["/".join(parts[: index + 1]) for index in range(len(parts))]
        return [(prefix, self.specs[prefix]) for prefix in prefixes if prefix in self.specs]


def read_regular_file(path: bytes, limit: int) -> bytes | None:
    """Return at most ``limit`` bytes of the regular file at ``path``, or None if it is not one or cannot be read.

    The file is opened without following a symlink and without blocking, then checked on the open descriptor:
    a path swapped for a symlink, a FIFO or a device after the walk is refused rather than followed or waited on
    (opening a FIFO to read blocks until a writer comes, and would hold the job forever under its heartbeat).
    """
    try:
        descriptor = os.open(path, os.O_RDONLY | NO_FOLLOW | NO_BLOCK)
    except OSError:
        return None
    with os.fdopen(descriptor, "rb") as handle:
        try:
            if not stat.S_ISREG(os.fstat(descriptor).st_mode):
                return None
            return handle.read(limit)
        except OSError:
            return None


SUBMODULE_PATH = re.compile(rb"^\s*path\s*=\s*(.+?)\s*$", re.MULTILINE)


def _submodule_paths(gitmodules: bytes) -> frozenset[str]:
    """Return the paths a ``.gitmodules`` file gives its submodules (a folder not checked out holds no ``.git``)."""
    return frozenset(display_path(match.group(1).strip(b'"')) for match in SUBMODULE_PATH.finditer(gitmodules))


class DirectorySource:
    """A directory tree on this machine.

    A file's stamp is a digest of its absolute path, device, inode, size and modification and change times in
    nanoseconds: what git's index keeps to tell an untouched file without reading it. Writing, renaming or
    replacing a file moves its change time, which no tool can set back. A file changed less than ``SETTLE_NS``
    before the walk gets no stamp (as git treats a "racily clean" entry): on a file system whose clock ticks
    coarsely, a write in the tick of the read that recorded a stamp would leave the stamp as it was.
    """

    kind = "directory"
    content_addressed = False  # a stamp says what the bytes were when read; they may be others by now
    SETTLE_NS = 2_000_000_000  # FAT's clock ticks every 2 s; most file systems' every nanosecond or jiffy

    def __init__(self, root: str, exclusions: Exclusions, *, time_ns=time.time_ns):
        self.root = os.path.realpath(root)
        self.exclusions = exclusions
        self.commit = ""
        self.time_ns = time_ns
        self._settled_before = 0
        self._submodules: frozenset[str] = frozenset()

    @property
    def identity(self) -> str:
        return f"directory:{self.root}"

    def entries(self) -> Iterator[Entry]:
        """Yield what the walk finds, depth first in name order (a stack of listings, not nested generators)."""
        self._settled_before = self.time_ns() - self.SETTLE_NS
        root = os.fsencode(self.root)
        listing = self._list(root, b"")
        if listing is None:
            raise SourceNotFound("The source directory cannot be read.")
        self._submodules = _submodule_paths(read_regular_file(os.path.join(root, b".gitmodules"), 1 << 20) or b"")
        stack = [iter(listing)]
        while stack:
            for child, raw in stack[-1]:
                path = display_path(raw)
                try:
                    if child.is_symlink():
                        if not self.exclusions.excluded(path, False):
                            yield Entry(path, "symlink", inside=symlink_stays_inside(path, os.readlink(child.path)))
                    elif child.is_dir(follow_symlinks=False):
                        if path in self._submodules or os.path.lexists(os.path.join(child.path, b".git")):
                            if not self.exclusions.excluded(path, False):  # as a revision checks its gitlink
                                yield Entry(path, "submodule")
                        elif not self.exclusions.excluded(path, True):
                            listing = self._list(child.path, raw)
                            if listing is None:
                                yield Entry(path, "special")
                            else:
                                stack.append(iter(listing))
                                break
                    elif child.is_file(follow_symlinks=False):
                        if not self.exclusions.excluded(path, False):
                            info = child.stat(follow_symlinks=False)
                            yield Entry(path, "file", info.st_size, child.path, stamp=self._stamp(child.path, info))
                    elif not self.exclusions.excluded(path, False):
                        yield Entry(path, "special")
                except OSError:
                    continue  # vanished mid-walk: not part of what we can vouch for
            else:
                stack.pop()

    def _list(self, absolute: bytes, relative: bytes) -> list[tuple[os.DirEntry, bytes]] | None:
        """Return the directory's children with their relative paths, in name order; None if it cannot be read.

        A virtual environment lists as empty; the directory's ``.gitignore`` is taken in on the way.
        """
        try:
            with os.scandir(absolute) as scan:
                children = sorted(scan, key=_name)
        except OSError:
            return None
        names = {child.name for child in children}
        if relative and b"pyvenv.cfg" in names:
            return []  # a virtual environment
        if b".gitignore" in names:
            # As git does, a .gitignore that is a symlink (or a FIFO, or anything but a file) is not read.
            patterns = read_regular_file(os.path.join(absolute, b".gitignore"), 1 << 20)
            if patterns is not None:
                self.exclusions.add_gitignore(display_path(relative) if relative else "", patterns)
        prefix = relative + b"/" if relative else b""
        return [(child, prefix + child.name) for child in children]

    def _stamp(self, absolute: bytes, info: os.stat_result) -> str:
        if max(info.st_mtime_ns, info.st_ctime_ns) >= self._settled_before:
            return ""
        fields = b"%d %d %d %d %d" % (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
        return hashlib.sha256(absolute + b"\0" + fields).hexdigest()

    def read(self, entries: list[Entry], limit: int) -> Iterator[tuple[Entry, bytes | None]]:
        """Yield each entry with its bytes (at most ``limit`` + 1; None if it cannot be read now), in order."""
        for entry in entries:
            yield entry, read_regular_file(entry.handle, limit + 1)

    def close(self) -> None:
        pass


def _git_environment() -> dict:
    """The environment for git: none of the caller's ``GIT_*`` (a ``GIT_DIR`` would point at another repository)."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("GIT_")}
    env.update(GIT_ENV)
    return env


def _git(path: str, *args: str, data: bytes | None = None) -> subprocess.CompletedProcess:
    env = _git_environment()
    try:
        return subprocess.run(["git", "-C", path, *args], input=data, capture_output=True, env=env, check=False)
    except FileNotFoundError:
        raise SourceNotFound("The git command is not installed; a revision cannot be read.") from None


_OBJECT_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")  # SHA-1 or SHA-256


def resolve_revision(path: str, revision: str) -> str:
    """Return the commit id ``revision`` names in the repository at ``path``.

    Raises ``SourceNotFound`` if ``path`` is not in a git repository and ``RevisionNotFound`` if the revision
    names no commit there, or names one that does not hold ``path`` (a subfolder added since, say, which would
    otherwise be analysed as empty).
    """
    if not os.path.isdir(path):
        raise SourceNotFound(f"{path} is not a directory.")
    # The common case in one git process: the commit and the tree of this folder in it. Only a failure takes
    # the three steps below, which tell why (a queue of many paths at a revision spawns one process per path).
    # Without --verify, git before 2.43 would take a revision starting with '-' for an option (and echoes
    # --end-of-options), so such a revision goes the careful way; anything but two object ids does too.
    if not revision.startswith("-"):
        found = _git(path, "rev-parse", f"{revision}^{{commit}}", f"{revision}^{{commit}}:./")
        names = found.stdout.decode("ascii", errors="replace").split()
        if found.returncode == 0 and len(names) == 2 and all(_OBJECT_ID.fullmatch(name) for name in names):
            return names[0]
    if _git(path, "rev-parse", "--git-dir").returncode != 0:
        raise SourceNotFound(f"{path} is not a git repository, so it has no revision {revision!r}.")
    found = _git(path, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{revision}^{{commit}}")
    commit = found.stdout.decode("ascii", errors="replace").strip()
    if found.returncode != 0 or not commit:
        raise RevisionNotFound(f"The revision {revision!r} names no commit in {path}.")
    if _git(path, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{commit}:./").returncode != 0:
        raise RevisionNotFound(f"{path} is not a folder in the commit {commit[:12]} that {revision!r} names.")
    return commit


class GitSource:
    """One commit of a git repository, read from the object store (the part under ``root`` if a subfolder)."""

    kind = "git"
    content_addressed = True  # a stamp is the blob id: it names the bytes themselves

    def __init__(self, root: str, commit: str, exclusions: Exclusions):
        self.root = os.path.realpath(root)
        self.commit = commit
        self.exclusions = exclusions
        self._batch: subprocess.Popen | None = None

    @property
    def identity(self) -> str:
        return f"git:{self.root}"

    def _listing(self) -> list[tuple[bytes, str, str, int]]:
        listed = _git(self.root, "ls-tree", "-r", "-z", "-l", "--end-of-options", self.commit)
        if listed.returncode != 0:
            raise RevisionNotFound(f"The commit {self.commit} cannot be read from {self.root}.")
        rows = []
        for record in listed.stdout.split(b"\0"):
            if not record:
                continue
            meta, _, raw = record.partition(b"\t")
            mode, kind, oid, size = meta.split(None, 3)
            rows.append((raw, mode.decode(), oid.decode(), int(size) if size.strip().isdigit() else 0))
        rows.sort(key=lambda row: row[0])
        return rows

    def entries(self) -> Iterator[Entry]:
        rows = self._listing()
        venvs = {posixpath.dirname(display_path(raw)) for raw, *_ in rows if is_named(raw, b"pyvenv.cfg")}
        venvs.discard("")
        # Every listed path is tracked, and git never ignores a tracked file: the .gitignore files are not read.
        admitted: dict[str, bool] = {"": True}

        def directory_admitted(directory: str) -> bool:
            if directory not in admitted:
                admitted[directory] = (
                    directory_admitted(posixpath.dirname(directory))
                    and directory not in venvs
                    and not self.exclusions.excluded(directory, True)
                )
            return admitted[directory]

        links = {}
        for raw, mode, oid, size in rows:
            if mode == "120000":
                links[oid] = None
        link_targets = dict(self._cat(list(links)))
        for raw, mode, oid, size in rows:
            if is_unsafe(raw):
                yield Entry(display_path(raw), "unsafe")
                continue
            path = display_path(raw)
            if not directory_admitted(posixpath.dirname(path)) or self.exclusions.excluded(path, False):
                continue
            if mode == "160000":
                yield Entry(path, "submodule")
            elif mode == "120000":
                target = link_targets.get(oid)  # None if the object is missing: then it counts as escaping
                yield Entry(path, "symlink", inside=target is not None and symlink_stays_inside(path, target))
            elif mode in FILE_MODES:
                yield Entry(path, "file", size, oid, stamp=oid)
            else:
                yield Entry(path, "special")

    def _cat(self, oids: list[str]) -> list[tuple[str, bytes]]:
        return list(zip(oids, self._read_blobs(oids)))

    def _read_blobs(self, oids: list[str]) -> Iterator[bytes]:
        """Yield the bytes of each object in ``oids``, in order, from one long-lived ``git cat-file --batch``.

        The ids go to git ``REQUESTS_AHEAD`` at a time, and only then are their answers read (a round trip per
        object made reading a revision slower than parsing it). That many ids always fit in the pipe, so writing
        them never waits for git, even while git waits for its answers to be read.
        """
        if self._batch is None:
            self._batch = subprocess.Popen(
                ["git", "-C", self.root, "cat-file", "--batch"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=_git_environment(),
            )
        batch, unread = self._batch, 0
        try:
            for start in range(0, len(oids), REQUESTS_AHEAD):
                chunk = oids[start:start + REQUESTS_AHEAD]
                batch.stdin.write("".join(f"{oid}\n" for oid in chunk).encode("ascii"))
                batch.stdin.flush()
                unread = len(chunk)
                for oid in chunk:
                    header = batch.stdout.readline().split()
                    if len(header) != 3:
                        # "<oid> missing": a shallow or partial clone, or a damaged store. The file is reported
                        # not read, and the rest of the revision is still analysed.
                        if header[-1:] != [b"missing"]:
                            raise RevisionNotFound(f"The object {oid} cannot be read from {self.root}.")
                        unread -= 1
                        yield None
                        continue
                    data = batch.stdout.read(int(header[2]))
                    batch.stdout.read(1)  # the newline after each object
                    unread -= 1
                    yield data
        finally:
            if unread:
                self.close()  # answers left in the pipe would be taken for the next request's

    def read(self, entries: list[Entry], limit: int) -> Iterator[tuple[Entry, bytes | None]]:
        # ls-tree gave each blob's exact size, already checked against the limit
        with closing(self._read_blobs([entry.handle for entry in entries])) as blobs:
            for entry in entries:
                yield entry, next(blobs)

    def close(self) -> None:
        if self._batch is not None:
            self._batch.stdin.close()
            self._batch.stdout.close()
            self._batch.wait()
            self._batch = None


def open_source(path: str, commit: str, exclusions: Exclusions, *, time_ns=time.time_ns):
    """Return the source to read: the commit of the repository at ``path``, or the directory itself.

    ``time_ns`` is the wall clock a directory's stamps are judged by.
    """
    if not os.path.exists(path):
        raise SourceNotFound(f"The source {path} does not exist.")
    if not os.path.isdir(path):
        raise SourceNotFound(f"The source {path} is not a directory.")
    if not os.access(path, os.R_OK | os.X_OK):
        raise SourceNotFound(f"The source {path} cannot be read.")
    if commit:
        return GitSource(path, commit, exclusions)
    return DirectorySource(path, exclusions, time_ns=time_ns)
