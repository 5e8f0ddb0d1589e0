"""
Where in a manifest's text an entry lies, for the parsers (``json``, ``tomllib``, PyYAML's loader) that give values
and no positions.

A key is found by its whole path of keys, never by its name alone: a lockfile names a package in many places
(``Cargo.lock`` lists it among the dependencies of every package before its own ``[[package]]`` table, a
``packages.lock.json`` in every entry that depends on it), and a manifest may hold one name in several tables
(``react`` as a peer and as a dev dependency). Each text is scanned once, by a regular expression over its tokens,
however many entries are looked up.
"""

import json
import re

# The next JSON key (group 1: its text between the quotes), opening bracket (2) or closing bracket (3), after
# whatever is not one: numbers, literals, punctuation and string values, skipped inside the regular expression so
# that the loop over the matches sees only what it acts on. Possessive (the text is valid JSON: ``json`` read it).
_JSON_STRING = r'"[^"\\\n]*+(?:\\.[^"\\\n]*+)*+"'
_JSON_TOKEN = re.compile(
    rf'(?:[^"{{}}\[\]]++|{_JSON_STRING}(?!\s*:))*+(?:"([^"\\\n]*+(?:\\.[^"\\\n]*+)*+)"\s*:|([{{\[])|([}}\]]))'
)

_TOML_PART = r"""(?:[A-Za-z0-9_-]+|"(?:[^"\\\n]|\\.)*"|'[^'\n]*')"""
_TOML_DOTTED = rf"{_TOML_PART}(?:\s*\.\s*{_TOML_PART})*"
_TOML_HEADER = re.compile(rf"\[\[?\s*({_TOML_DOTTED})\s*\]\]?\s*(?:#.*)?$")
_TOML_KEY = re.compile(rf"({_TOML_DOTTED})\s*=")
_TOML_PARTS = re.compile(_TOML_PART)


def _toml_parts(dotted: str) -> tuple[str, ...]:
    parts = []
    for part in _TOML_PARTS.findall(dotted):
        if part.startswith('"'):
            part = json.loads(part)  # a basic string's escapes are JSON's, but for \U and \e, which no key uses
        elif part.startswith("'"):
            part = part[1:-1]
        parts.append(part)
    return tuple(parts)


class Lines:
    """A manifest's lines, and the 1-based line of an entry in it (``default`` when there is none)."""

    def __init__(self, text: str):
        self.text = text
        self.lines = text.splitlines()
        self._json: dict[tuple, int] | None = None
        self._toml: dict[tuple, int] | None = None
        self._yaml: dict[str, int] | None = None

    def of(self, needle: str, after: int = 0, default: int = 1) -> int:
        """Return the first line after line ``after`` that holds ``needle``."""
        for number, line in enumerate(self.lines[after:], start=after + 1):
            if needle in line:
                return number
        return default

    def json_key(self, *path: str, default: int = 1) -> int:
        """Return the line of the JSON object key at ``path`` (``"dependencies", "net8.0", "Azure.Core"``).

        Arrays add no part to a path: in ``{"a": [{"b": 1}]}`` the key ``b`` is at ``("a", "b")``.
        """
        if self._json is None:
            self._json = {}
            objects: list[bool] = []  # for each open bracket, whether it is an object's
            keys: list = []  # the current key of each open object
            line, at = 1, 0
            for token in _JSON_TOKEN.finditer(self.text):
                kind = token.lastindex
                if kind == 1:
                    if objects and objects[-1]:
                        start = token.start(1)
                        line += self.text.count("\n", at, start)
                        at = start
                        key = token.group(1)
                        keys[-1] = json.loads(f'"{key}"') if "\\" in key else key
                        self._json.setdefault(tuple(keys), line)
                elif kind == 2:
                    objects.append(token.group(2) == "{")
                    if objects[-1]:
                        keys.append(None)
                elif objects and objects.pop():
                    keys.pop()
        return self._json.get(path, default)

    def toml_key(self, *path: str, default: int = 1) -> int:
        """Return the line that sets the TOML key at ``path``: its ``key =`` line, or the ``[table]`` header it names.

        ``("dependencies", "serde")`` is ``serde = "1"`` under ``[dependencies]``, or the header
        ``[dependencies.serde]`` that ``cargo publish`` writes. Lines inside a multi-line string are skipped.
        """
        if self._toml is None:
            self._toml = {}
            table: tuple[str, ...] = ()
            in_string = None
            for number, line in enumerate(self.lines, start=1):
                if in_string:
                    if line.count(in_string) % 2:
                        in_string = None
                    continue
                stripped = line.strip()
                if header := _TOML_HEADER.match(stripped):
                    table = _toml_parts(header.group(1))
                    self._set_toml((), table, number)
                elif key := _TOML_KEY.match(stripped):
                    self._set_toml(table, _toml_parts(key.group(1)), number)
                for quotes in ('"""', "'''"):
                    if stripped.count(quotes) % 2:
                        in_string = quotes
        return self._toml.get(path, default)

    def _set_toml(self, table: tuple, parts: tuple, number: int) -> None:
        # A dotted key (``serde.workspace = true``) or header (``[dependencies.serde]``) sets each of its prefixes.
        for end in range(1, len(parts) + 1):
            self._toml.setdefault(table + parts[:end], number)

    def array_tables(self, name: str, key: str) -> list[int]:
        """Return, for each ``[[name]]`` table in order, the line of its ``key =`` (its header's if it has none).

        ``tomllib`` lists the tables in the same order, so the n-th table it gives is at the n-th line here.
        """
        header = re.compile(rf"\[\[\s*{re.escape(name)}\s*\]\]\s*(?:#.*)?$")
        assignment = re.compile(rf"""["']?{re.escape(key)}["']?\s*=""")
        found, open_table = [], False
        for number, line in enumerate(self.lines, start=1):
            stripped = line.strip()
            if header.match(stripped):
                found.append(number)
                open_table = True
            elif stripped.startswith("["):
                open_table = False
            elif open_table and assignment.match(stripped):
                found[-1] = number
                open_table = False
        return found

    def yaml_key(self, key: str, default: int = 1) -> int:
        """Return the line of the first mapping key ``key:`` (YAML lockfiles name each entry once as a key)."""
        if self._yaml is None:
            self._yaml = {}
            for number, line in enumerate(self.lines, start=1):
                stripped = line.strip()
                if stripped[:1] in ("'", '"'):
                    end = stripped.find(stripped[0], 1)
                    if end > 0 and stripped[end + 1:end + 2] == ":":
                        self._yaml.setdefault(stripped[1:end], number)
                elif ":" in stripped:
                    name = stripped.split(":", 1)[0].strip()
                    self._yaml.setdefault(name, number)
                    if name.startswith("/"):
                        self._yaml.setdefault(name[1:], number)
        return self._yaml.get(key, default)
