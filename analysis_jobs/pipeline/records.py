"""What the extract stage knows of each listed entry, and what the link stage reads back."""

import json
from dataclasses import dataclass

import orjson


@dataclass(slots=True)
class FileRecord:
    path: str
    kind: str  # file | symlink | unsafe | submodule | special
    size: int = 0
    sha256: str = ""
    binary: bool = False
    lines: int = 0
    language: str = "other"
    extractor: str = ""  # the extractor key, when one read the file
    # The extractor's facts as their cached JSON text: a record holds a tenth of the memory the decoded facts
    # would, and the link stage decodes one batch of files at a time (``decoded``).
    facts: str | None = None
    skipped: str = ""  # why a file's bytes were not read: too-large, unreadable
    inside: bool = True

    def decoded(self) -> dict:
        """Return the extractor's facts ({} when none read the file)."""
        if not self.facts:
            return {}
        try:
            return orjson.loads(self.facts)
        except orjson.JSONDecodeError:
            return json.loads(self.facts)  # a lone surrogate escaped in a string, which only json takes
