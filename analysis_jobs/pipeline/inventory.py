"""The first pipeline: resolve the source, inventory its files, build canonical facts."""

import hashlib
import os
from pathlib import Path

from ..exceptions import SourceNotFound
from .base import AnalysisState, Check, Stage

SCHEMA = "ri.v1"

LANGUAGES = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".tsx": "typescript",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".rb": "ruby",
    ".c": "c",
    ".h": "c",
    ".cpp": "cpp",
    ".hpp": "cpp",
    ".json": "json",
    ".toml": "toml",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".md": "markdown",
    ".html": "html",
    ".css": "css",
    ".sh": "shell",
    ".tf": "terraform",
}


def language_of(name: str) -> str:
    if name == "Dockerfile" or name.startswith("Dockerfile."):
        return "dockerfile"
    return LANGUAGES.get(os.path.splitext(name)[1].lower(), "other")


def resolve_source(state: AnalysisState, check: Check) -> None:
    """Turn the job's source into a readable directory, or fail for good with ``RI-SOURCE-NOT-FOUND``."""
    root = Path(state.source)
    if not root.exists():
        raise SourceNotFound(f"The source {state.source} does not exist.")
    if not root.is_dir():
        raise SourceNotFound(f"The source {state.source} is not a directory.")
    try:
        os.listdir(root)
    except OSError as exc:
        raise SourceNotFound(f"The source {state.source} cannot be read ({exc.strerror}).") from None
    state.values["root"] = root.resolve()


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def inventory_files(state: AnalysisState, check: Check) -> None:
    """List every regular file under the root with its size, hash and language; never leave the root."""
    root: Path = state.values["root"]
    files = []
    for directory, dirnames, filenames in os.walk(root, followlinks=False):
        check()
        dirnames.sort()
        for name in sorted(filenames):
            path = Path(directory, name)
            if path.is_symlink():
                target = path.resolve()
                if not target.is_relative_to(root) or not target.is_file():
                    continue
            elif not path.is_file():
                continue
            try:
                size, sha = path.stat().st_size, _sha256(path)
            except OSError:
                continue  # vanished or unreadable mid-walk: not part of what we can vouch for
            relative = path.relative_to(root).as_posix()
            files.append({"path": relative, "size": size, "sha256": sha, "language": language_of(name)})
    state.values["files"] = files


class InventoryPipeline:
    stages = (Stage("resolve", resolve_source), Stage("inventory", inventory_files))

    def document(self, state: AnalysisState) -> dict:
        files = state.values.get("files", [])
        languages: dict[str, int] = {}
        for entry in files:
            languages[entry["language"]] = languages.get(entry["language"], 0) + 1
        return {"schema": SCHEMA, "files": files, "languages": languages}

    def identity(self, state: AnalysisState) -> str:
        return ""
