"""Reading user files of records (JSONL or Parquet) with row-precise, one-line errors.

A researcher's file is validated completely before anything is written: the first bad row stops the
import with a message naming the file, the row and the fix.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ingest.errors import UserError
from ingest.jsonl import iter_json_objects

JSONL_SUFFIXES = (".jsonl", ".json", ".jsonl.gz", ".jsonl.zst", ".ndjson")


def _open_lines(path: Path) -> Iterator[bytes]:
    """Lines of a plain, gzip or zstd file. A file that is not what its suffix says, or that ends in the
    middle of a compressed stream, is a one-line error naming it (not a traceback, and not click's
    'aborted', which is what an EOFError inside a command turns into)."""
    name = path.name
    kind = "gzip" if name.endswith(".gz") else "zstd" if name.endswith(".zst") else None
    try:
        if kind == "gzip":
            with gzip.open(path, "rb") as f:
                yield from f
        elif kind == "zstd":
            yield from _zstd_lines(path)
        else:
            with open(path, "rb") as f:
                yield from f
    except EOFError:
        raise UserError(f"{path}: the {kind} stream ends early (a truncated file?); copy or compress it again") from None
    except (gzip.BadGzipFile, OSError, ValueError) as e:
        if kind is None:
            raise UserError(f"{path}: cannot read it ({getattr(e, 'strerror', None) or e}); check the file") from None
        raise UserError(f"{path}: not a valid {kind} file ({str(e).splitlines()[0]}); check that the suffix "
                        f"matches the compression, or decompress it first") from None


def _zstd_lines(path: Path) -> Iterator[bytes]:
    """Lines of a zstd file; a stream that stops inside a frame raises EOFError, a foreign file ValueError."""
    import zstandard

    d = zstandard.ZstdDecompressor().decompressobj()
    rest = b""
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            try:
                rest += d.decompress(chunk)
            except zstandard.ZstdError as e:
                raise ValueError(str(e)) from None
            *lines, rest = rest.split(b"\n")
            for line in lines:
                yield line + b"\n"
    if not d.eof:
        raise EOFError("zstd frame incomplete")
    if rest:
        yield rest


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
