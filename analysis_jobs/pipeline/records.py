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
    # The extractor's facts as their cached JSON text (``facts_text``): a record holds a tenth of the memory the decoded facts
    # would, and the link stage decodes one batch of files at a time (``decoded``).
    facts: str | None = None
    skipped: str = ""  # why a file's bytes were not read: too-large, unreadable
    inside: bool = True

    def decoded(self) -> dict:
        """Return the extractor's facts ({} when none read the file)."""
        if not self.facts:
            return {}
        if self.facts[0] == " ":  # written by the standard library's encoder: see ``facts_text``
            return json.loads(self.facts)
        return orjson.loads(self.facts)


def facts_text(facts: dict) -> str:
    """Return an extractor's facts as the JSON text that is cached and kept on a record.

    orjson writes it, except what orjson refuses (a lone surrogate, an integer past 64 bits, which it would read
    back as a float): the standard library's encoder writes that, after a space that tells ``decoded`` to read
    it with the standard library too. Either way it is JSON with sorted keys.
    """
    try:
        return orjson.dumps(facts, option=orjson.OPT_SORT_KEYS).decode()
    except orjson.JSONEncodeError:
        return " " + json.dumps(facts, sort_keys=True, separators=(",", ":"))
