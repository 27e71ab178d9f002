"""One parser for repeatable ``KEY=VALUE`` options (``--engine-arg``, ``classify train --param``).

Values are typed the same way everywhere, so a user learns one rule: numbers as numbers, true/false in any
case as booleans, none/null as None, JSON lists and objects as such, anything else as a string. A key
given twice is an error, since which one wins would be a guess.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ingest.errors import UserError


def parse_value(value: str) -> Any:
    value = value.strip()
    low = value.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("none", "null"):
        return None
    try:
        return json.loads(value)
    except ValueError:
        return value


def parse_key_values(pairs: Sequence[str], option: str, example: str, dashes: bool = False) -> dict[str, Any]:
    """``["a=1", "b=x"]`` -> ``{"a": 1, "b": "x"}``. With `dashes`, ``max-df`` means ``max_df`` (our own
    parameters); without, a dash is an error (keys passed on to another library must be exact)."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip().replace("-", "_") if dashes else key.strip()
        if not sep or not key or not key.isidentifier():
            raise UserError(f"{option} {pair!r}: use KEY=VALUE with a Python name as KEY, e.g. {example}")
        if key in out:
            raise UserError(f"{option} {key} is given twice; keep one")
        out[key] = parse_value(value)
    return out
