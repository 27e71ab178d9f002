"""Reading user files of records (JSONL or Parquet) with row-precise, one-line errors.

A researcher's file is validated completely before anything is written: the first bad row stops the
import with a message naming the file, the row and the fix.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ingest.errors import UserError

JSONL_SUFFIXES = (".jsonl", ".json", ".jsonl.gz", ".jsonl.zst", ".ndjson")


def _open_lines(path: Path) -> Iterator[bytes]:
    name = path.name
    if name.endswith(".gz"):
        with gzip.open(path, "rb") as f:
            yield from f
    elif name.endswith(".zst"):
        import io

        import zstandard

        with open(path, "rb") as raw, zstandard.ZstdDecompressor().stream_reader(raw) as r:
            yield from io.BufferedReader(r)
    else:
        with open(path, "rb") as f:
            yield from f


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
    for i, raw in enumerate(_open_lines(path), start=1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise UserError(f"{path}, row {i}: not valid UTF-8 (byte {e.start}); re-encode the file as UTF-8") from None
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as e:
            raise UserError(f"{path}, row {i}: invalid JSON ({e.msg}); each line must be one JSON object") from None
        if not isinstance(rec, dict):
            raise UserError(f"{path}, row {i}: expected a JSON object, got {type(rec).__name__}")
        yield i, rec


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
