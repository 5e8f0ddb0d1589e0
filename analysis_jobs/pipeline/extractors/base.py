"""What every extractor is: a name, a version, and a function from a file's bytes to JSON-ready facts."""

from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit


@dataclass(frozen=True, slots=True)
class Extractor:
    name: str
    version: str
    extract: Callable[[bytes], dict]

    @property
    def key(self) -> str:
        """The cache key part that changes whenever this extractor's output could."""
        return f"{self.name}@{self.version}"


def http_target(url: str | None) -> list[str] | None:
    """Return ``[host, url]`` for a literal http(s) URL (query and fragment dropped), or None."""
    if not url or "://" not in url:
        return None
    try:
        parts = urlsplit(url.strip())
        host = parts.hostname
        port = parts.port
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not host or "{" in host or "$" in host:
        return None
    netloc = f"{host}:{port}" if port else host
    return [netloc, f"{parts.scheme.lower()}://{netloc}{parts.path}"]


def first_syntax_error(root, tolerated: Callable[[object], bool] = lambda node: False):
    """Return the first node of the tree-sitter tree ``root``, in source order, that is an error or a missing token
    and not ``tolerated`` (one the grammar reports where the language allows the syntax), or None.

    Only subtrees that hold an error are descended into.
    """
    pending = [root]
    while pending:
        node = pending.pop()
        if (node.is_missing or node.is_error) and not tolerated(node):
            return node
        pending.extend(reversed([child for child in node.children if child.has_error or child.is_missing]))
    return None


def decode(data: bytes) -> str:
    """Return text for a text format: UTF-8 (a BOM allowed); bytes that are not UTF-8 become U+FFFD."""
    return data.decode("utf-8-sig", errors="replace")
