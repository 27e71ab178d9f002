"""Reading a benchmark file (JSONL or Parquet: id, input, answer, optional score) into checked records.

The whole file is read and checked before anything is traced or written: an item without text, a repeated
id or a score that is not a number stops the command with one line naming the row.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from ingest.errors import UserError
from ingest.importers.records import iter_records

ID_FIELDS = ("id", "item_id")
INPUT_FIELDS = ("input", "question", "prompt")
ANSWER_FIELDS = ("answer", "target", "output")


@dataclass(frozen=True)
class BenchItem:
    item_id: str
    input: str
    answer: str
    score: float | None = None  # the model's score on the item (e.g. 1/0 correct), when the file has one


def _pick(rec: dict, names: tuple[str, ...]):
    for n in names:
        if n in rec:
            return n, rec[n]
    return names[0], None


def _text(path: Path, i: int, rec: dict, names: tuple[str, ...]) -> str:
    field, v = _pick(rec, names)
    if v is None:
        raise UserError(f"{path}, row {i}: no {' / '.join(repr(n) for n in names)} text; every item needs an "
                        "input and an answer")
    if not isinstance(v, str):
        raise UserError(f"{path}, row {i}: {field!r} must be a string, got {type(v).__name__}")
    if not v.strip():
        raise UserError(f"{path}, row {i}: {field!r} is empty; every item needs an input and an answer text")
    try:
        v.encode("utf-8")
    except UnicodeEncodeError as e:
        raise UserError(f"{path}, row {i}: {field!r} has a character with no UTF-8 form ({e.reason}); fix the "
                        "text or its escapes") from None
    return v


def read_items(path: str | Path) -> list[BenchItem]:
    """Every item of the file, checked; the first problem is a one-line `UserError`."""
    path = Path(path)
    items: list[BenchItem] = []
    first_row: dict[str, int] = {}
    for i, rec in iter_records(path):
        _, raw_id = _pick(rec, ID_FIELDS)
        if raw_id is None or isinstance(raw_id, bool) or not isinstance(raw_id, (str, int)) or not str(raw_id).strip():
            raise UserError(f"{path}, row {i}: needs an 'id' (a string or integer) for the item")
        item_id = str(raw_id)
        if item_id in first_row:
            raise UserError(f"{path}, row {i}: id {item_id!r} appears again (first in row {first_row[item_id]}); "
                            "every item needs its own id")
        first_row[item_id] = i
        score = rec.get("score")
        if score is not None:
            if isinstance(score, bool):
                score = float(score)
            if not isinstance(score, (int, float)) or not math.isfinite(float(score)):
                raise UserError(f"{path}, row {i}: 'score' must be a finite number (e.g. 1 correct, 0 wrong), "
                                f"got {score!r}")
            score = float(score)
        items.append(BenchItem(item_id, _text(path, i, rec, INPUT_FIELDS), _text(path, i, rec, ANSWER_FIELDS), score))
    if not items:
        raise UserError(f"{path}: no items found; the file is empty")
    return items
