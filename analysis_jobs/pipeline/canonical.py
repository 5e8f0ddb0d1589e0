"""Canonical JSON: the one byte form of a facts document that is hashed and stored."""

import hashlib
import json
import unicodedata


def _normalise(value):
    if isinstance(value, str):
        return unicodedata.normalize("NFC", value)
    if isinstance(value, dict):
        return {_normalise(k): _normalise(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_normalise(v) for v in value]
    if isinstance(value, float):
        raise TypeError("Canonical facts hold no floats; store a string or an integer.")
    return value


def canonical_json(document: dict) -> str:
    """Return ``document`` as canonical JSON: NFC strings, sorted keys, no floats, no insignificant space."""
    return json.dumps(_normalise(document), sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def content_hash(text: str) -> str:
    """Return the SHA-256 hex digest of canonical JSON text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
