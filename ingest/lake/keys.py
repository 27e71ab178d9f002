"""Deterministic row keys.

Every raw row's key is a hash of its natural key, so running a step twice yields the same keys and a
re-run can replace rows instead of adding copies.
"""

from __future__ import annotations

import hashlib

_SEP = "\x1f"  # unit separator: cannot appear by accident between parts


def make_key(*parts: object) -> str:
    """A 32-hex-digit key from the natural-key parts (None is encoded distinctly from "")."""
    encoded = _SEP.join("\x00" if p is None else f"{type(p).__name__}:{p}" for p in parts)
    return hashlib.blake2b(encoded.encode("utf-8"), digest_size=16).hexdigest()


def text_hash(text: str) -> str:
    """The content hash that marks which text a derived row (a trace, a posterior) was computed from.

    MD5 hex of the UTF-8 bytes: exactly DuckDB's `md5(text)`, so dbt models can compare a stored hash with
    the current text of a generation without Python. Not a security hash; it only detects changed text."""
    return hashlib.md5(text.encode("utf-8")).hexdigest()
