"""Read training documents from JSONL (plain, .gz, .zst) and Parquet files, or folders of them.

Why this module exists: the index must be reproducible and its errors actionable. Files are visited in a
fixed order (sorted, recursive), every document keeps its source file and line, and every problem with the
input becomes a one-line `UserError` naming the file, the line and the fix, so a bad corpus fails before any
index is published (the builder writes into a temporary folder and only renames it when all went well).
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from ingest.errors import UserError
from ingest.jsonl import json_object, open_lines

SUPPORTED_SUFFIXES: tuple[str, ...] = (".jsonl", ".jsonl.gz", ".jsonl.zst", ".parquet")
"""File name endings the readers accept (case-sensitive, as infini-gram's own indexer)."""

_PARQUET_BATCH_ROWS = 4096


class Document(NamedTuple):
    """One input document. `line_no` is 1-based (the line, or Parquet row, an editor would show)."""

    source_file: Path
    line_no: int
    text: str
    metadata: dict[str, Any]


def _supported(path: Path) -> bool:
    return path.name.endswith(SUPPORTED_SUFFIXES)


def list_input_files(inputs: Sequence[str | os.PathLike[str]]) -> list[Path]:
    """Expand `inputs` (files or folders) into a deterministic list of absolute file paths.

    Folders are walked recursively; inside them only supported files are taken (hidden files and folders
    are skipped) in sorted order of their relative path. A file named explicitly must have a supported
    extension. Duplicates (the same file reached twice) are kept once, at their first position.
    """
    if isinstance(inputs, (str, os.PathLike)):
        inputs = [inputs]
    if not inputs:
        raise UserError("no input given: pass at least one .jsonl/.jsonl.gz/.jsonl.zst/.parquet file or folder")
    files: list[Path] = []
    for raw in inputs:
        path = Path(os.path.abspath(raw))
        if not path.exists():
            raise UserError(f"input {raw} does not exist: check the path")
        if path.is_dir():
            found = []
            for root, dirs, names in os.walk(path):
                dirs[:] = [d for d in dirs if not d.startswith(".")]
                for name in names:
                    child = Path(root) / name
                    if not name.startswith(".") and _supported(child):
                        found.append(child)
            found.sort(key=lambda p: p.relative_to(path).as_posix())
            if not found:
                raise UserError(
                    f"folder {raw} holds no {'/'.join(SUPPORTED_SUFFIXES)} files: point the input at the corpus files"
                )
            files.extend(found)
        elif _supported(path):
            files.append(path)
        else:
            raise UserError(
                f"{raw}: unsupported file type; use {', '.join(SUPPORTED_SUFFIXES)} (convert other formats to JSONL first)"
            )
    seen: set[Path] = set()
    unique = []
    for f in files:
        if f not in seen:
            seen.add(f)
            unique.append(f)
    return unique


def _iter_jsonl(path: Path, text_field: str) -> Iterator[Document]:
    n_docs = 0
    line_no = 0
    try:
        for line_no, raw in enumerate(open_lines(path), start=1):
            record = json_object(raw, f"{path}:{line_no}", first=line_no == 1)
            if record is None:
                continue  # blank lines (e.g. a trailing newline) are not documents
            yield _to_document(path, line_no, record, text_field)
            n_docs += 1
    except (OSError, EOFError, zlib.error) as e:  # corrupt or truncated archive
        raise UserError(f"{path}: cannot read after line {line_no} ({e}); the file looks corrupt or truncated") from None
    except Exception as e:  # zstandard raises its own ZstdError
        if type(e).__name__ == "ZstdError":
            raise UserError(f"{path}: cannot decompress after line {line_no} ({e}); the file looks corrupt") from None
        raise
    if n_docs == 0:
        raise UserError(f"{path}: empty file, no documents; remove it from the inputs or fill it")


def _to_document(path: Path, line_no: int, record: dict[str, Any], text_field: str) -> Document:
    if text_field not in record:
        fields = ", ".join(sorted(record)[:8]) or "none"
        raise UserError(
            f"{path}:{line_no}: no '{text_field}' field (fields: {fields}); pass --text-field with the field that holds the text"
        )
    text = record.pop(text_field)
    if not isinstance(text, str):
        raise UserError(
            f"{path}:{line_no}: field '{text_field}' is {type(text).__name__}, not a string; pass --text-field with the text field"
        )
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise UserError(f"{path}:{line_no}: text holds an unpaired surrogate escape (e.g. \\ud800); fix the line") from None
    return Document(path, line_no, text, record)


def _iter_parquet(path: Path, text_field: str) -> Iterator[Document]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(path)
    except (pa.ArrowInvalid, OSError) as e:
        raise UserError(f"{path}: not a readable Parquet file ({e})") from None
    schema = pf.schema_arrow
    if text_field not in schema.names:
        raise UserError(
            f"{path}: no '{text_field}' column (columns: {', '.join(schema.names[:8])}); pass --text-field with the text column"
        )
    text_type = schema.field(text_field).type
    if not (pa.types.is_string(text_type) or pa.types.is_large_string(text_type)):
        raise UserError(f"{path}: column '{text_field}' has type {text_type}, not string; pass --text-field with the text column")
    row = 0
    for batch in pf.iter_batches(batch_size=_PARQUET_BATCH_ROWS):
        for record in batch.to_pylist():
            row += 1
            if record.get(text_field) is None:
                raise UserError(f"{path}: row {row}: '{text_field}' is null; drop the row or fill the text")
            yield _to_document(path, row, record, text_field)
    if row == 0:
        raise UserError(f"{path}: empty file, no documents; remove it from the inputs or fill it")


def iter_file(path: Path, text_field: str = "text") -> Iterator[Document]:
    """Documents of one file, in file order."""
    if path.name.endswith(".parquet"):
        return _iter_parquet(path, text_field)
    if path.name.endswith(SUPPORTED_SUFFIXES):
        return _iter_jsonl(path, text_field)
    raise UserError(f"{path}: unsupported file type; use {', '.join(SUPPORTED_SUFFIXES)}")


def iter_documents(inputs: Sequence[str | os.PathLike[str]], text_field: str = "text") -> Iterator[Document]:
    """Documents of all `inputs` (files or folders), in the deterministic order of `list_input_files`."""
    for path in list_input_files(inputs):
        yield from iter_file(path, text_field)
