"""
Canonical JSON: the one byte form of a facts document that is hashed and stored.

Sorted keys, NFC strings, no floats, no insignificant space. The common case costs two C-speed passes: the
document is encoded once, and only if the text holds a string that is not NFC is it normalised value by value
and encoded again. (Strings in JSON text are separated by ASCII quotes, which never compose with what follows
them, so the text is NFC exactly when every string in it is.) Floats are refused: every number token follows
``:``, ``,`` or ``[``, so text with no such character followed by digits and ``.``/``e`` holds none; only text
with a look-alike (inside a string) is decoded with a ``parse_float`` that raises.
"""

import hashlib
import json
import re
import unicodedata

_MAYBE_FLOAT = re.compile(r"[:,\[]-?[0-9]+[.eE]")


def _normalise(value):
    if isinstance(value, str):
        return value if value.isascii() else unicodedata.normalize("NFC", value)
    if isinstance(value, dict):
        return {_normalise(k): _normalise(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_normalise(v) for v in value]
    if isinstance(value, float):
        raise TypeError("Canonical facts hold no floats; store a string or an integer.")
    return value


def _refuse_float(text):
    raise TypeError("Canonical facts hold no floats; store a string or an integer.")


def _encode(document) -> str:
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def canonical_json(document: dict) -> str:
    """Return ``document`` as canonical JSON: NFC strings, sorted keys, no floats, no insignificant space."""
    try:
        text = _encode(document)
    except ValueError:
        raise TypeError("Canonical facts hold no floats; store a string or an integer.") from None
    if not (text.isascii() or unicodedata.is_normalized("NFC", text)):
        text = _encode(_normalise(document))
    if _MAYBE_FLOAT.search(text):
        json.loads(text, parse_float=_refuse_float)
    return text


def content_hash(text: str) -> str:
    """Return the SHA-256 hex digest of canonical JSON text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
