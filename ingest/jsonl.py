"""Reading JSONL input files (imports, reference documents, corpora to index) with one set of rules.

Lines come from plain, gzip or zstd files; a file that is not what its suffix says, or that ends in the
middle of a compressed stream, is a one-line error naming it (not a traceback, and not click's 'aborted',
which is what an EOFError inside a command turns into). Each non-blank line must be one JSON object in
UTF-8; a UTF-8 byte-order mark on the first line is dropped. Errors name the file and the line.

What Python's json module accepts but nothing downstream can store is refused here, once for every reader:
a lone surrogate escape ("\\ud800": a str with no UTF-8 form, which every later encode fails on), nesting
deeper than the parser's recursion limit (RecursionError) and integers of more than 4,300 digits (ValueError
since Python 3.11). Each is one line naming the file, the row and the field.
"""

from __future__ import annotations

import gzip
import json
import re
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ingest.errors import UserError


def open_lines(path: Path) -> Iterator[bytes]:
    """The raw lines (bytes, newline kept) of a plain, gzip (.gz) or zstd (.zst) file."""
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
    except (gzip.BadGzipFile, OSError, ValueError, zlib.error) as e:  # zlib.error: a damaged deflate stream
        if kind is None:
            raise UserError(f"{path}: cannot read it ({getattr(e, 'strerror', None) or e}); check the file") from None
        raise UserError(f"{path}: not a valid {kind} file ({str(e).splitlines()[0]}); check that the suffix "
                        f"matches the compression, or decompress it first") from None


def _zstd_lines(path: Path) -> Iterator[bytes]:
    """Lines of a zstd file of one or more frames (`zstd -dc` reads them all; a decompressor object stops at the
    end of the first, which silently dropped the rest of a concatenated file). A stream that stops inside a frame
    raises EOFError, a foreign file ValueError."""
    import zstandard

    new = zstandard.ZstdDecompressor().decompressobj
    d, in_frame = new(), False
    rest = b""
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            data = chunk
            while data:
                try:
                    rest += d.decompress(data)
                except zstandard.ZstdError as e:
                    raise ValueError(str(e)) from None
                in_frame = True
                data = b""
                if d.eof:  # one frame done: the bytes after it start the next frame
                    data, d, in_frame = d.unused_data, new(), False
            *lines, rest = rest.split(b"\n")
            for line in lines:
                yield line + b"\n"
    if in_frame:
        raise EOFError("zstd frame incomplete")
    if rest:
        yield rest


def json_object(raw: bytes, where: str, first: bool = False) -> dict[str, Any] | None:
    """One line as a JSON object; None for a blank line. `where` names the place in errors
    (e.g. "file.jsonl, row 3"); `first` drops a UTF-8 byte-order mark."""
    if first and raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise UserError(f"{where}: not valid UTF-8 (byte 0x{raw[e.start]:02x} at column {e.start + 1}); "
                        "re-encode the file as UTF-8") from None
    if not line.strip():
        return None
    try:
        rec = json.loads(line)
    except json.JSONDecodeError as e:
        raise UserError(f"{where}: invalid JSON ({e.msg} at column {e.colno}); each line must be one JSON "
                        "object") from None
    except RecursionError:
        raise UserError(f"{where}: JSON nested too deeply to read (arrays or objects inside each other more than "
                        "a few hundred levels); flatten the record") from None
    except ValueError as e:  # int('9' * 5000): Python's limit on digits in an integer
        raise UserError(f"{where}: invalid JSON ({str(e).split(';')[0]}); write such a number as a string") from None
    if not isinstance(rec, dict):
        raise UserError(f"{where}: expected a JSON object per line, got {type(rec).__name__}")
    if _SURROGATE_ESCAPE.search(raw):
        try:
            bad = _without_utf8_form(rec)
        except RecursionError:
            raise UserError(f"{where}: JSON nested too deeply to read; flatten the record") from None
        if bad is not None:
            field, e = bad
            raise UserError(f"{where}: {field} has a character with no UTF-8 form ({e.reason} at position "
                            f"{e.start}: a lone surrogate escape such as \\ud800); fix the text or its escapes")
    return rec


# a JSON escape of a UTF-16 surrogate; paired ones decode to one character, a lone one stays a surrogate
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def _without_utf8_form(value: Any, field: str = "") -> tuple[str, UnicodeEncodeError] | None:
    """(where, the error) of the first key or string in `value` that cannot be encoded as UTF-8, else None."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as e:
            return (repr(field if len(field) <= 60 else field[:57] + "...") if field else "a value"), e
        return None
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for k, v in items:
        name = f"{field}.{k}" if field else str(k)
        if isinstance(k, str):
            bad = _without_utf8_form(k, name)
            if bad is not None:
                return f"a field name in {repr(field) if field else 'the record'}", bad[1]
        bad = _without_utf8_form(v, name)
        if bad is not None:
            return bad
    return None


def iter_json_objects(path: Path, where: str = "{path}, row {i}") -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for every non-blank line of a JSONL file."""
    for i, raw in enumerate(open_lines(path), start=1):
        rec = json_object(raw, where.format(path=path, i=i), first=i == 1)
        if rec is not None:
            yield i, rec
