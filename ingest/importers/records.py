"""Reading user files of records (JSONL or Parquet) with row-precise, one-line errors.

A researcher's file is validated completely before anything is written: the first bad row stops the
import with a message naming the file, the row and the fix.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ingest.errors import UserError
from ingest.jsonl import iter_json_objects

JSONL_SUFFIXES = (".jsonl", ".json", ".jsonl.gz", ".jsonl.zst", ".ndjson")


def iter_records(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (row number from 1, record) from a JSONL or Parquet file."""
    path = Path(path)
    if not path.exists():
        raise UserError(f"{path}: file not found; check the path")
    if path.is_dir():
        raise UserError(f"{path} is a folder; pass a .jsonl or .parquet file")
    if path.name.endswith(".parquet"):
        yield from _iter_parquet(path)
    elif path.name.endswith(JSONL_SUFFIXES):
        yield from _iter_jsonl(path)
    else:
        raise UserError(f"{path}: unsupported file type; use .jsonl (optionally .gz/.zst) or .parquet")


def _iter_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    yield from iter_json_objects(path)


def _iter_parquet(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        t = pq.read_table(path)
    except (pa.ArrowInvalid, OSError) as e:
        raise UserError(f"{path}: not a readable Parquet file ({str(e).splitlines()[0]}); re-export it") from None
    binary_cols = [f.name for f in t.schema if pa.types.is_binary(f.type) or pa.types.is_large_binary(f.type)]
    for i, rec in enumerate(t.to_pylist(), start=1):
        for c in binary_cols:
            v = rec.get(c)
            if isinstance(v, bytes):
                try:
                    rec[c] = v.decode("utf-8")
                except UnicodeDecodeError as e:
                    raise UserError(f"{path}, row {i}: column {c!r} is not valid UTF-8 (byte {e.start}); "
                                    "re-encode it as UTF-8 text") from None
        yield i, rec
