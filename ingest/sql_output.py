"""The row formats `lmaudit sql` writes for pipes and files (`--format csv|tsv|json|markdown`); the terminal table
stays in the CLI.

Every format ends lines with LF (cut, awk and $(...) read plain lines; Python's csv module defaults to CRLF) and
writes NULL as an empty field (csv, tsv), `null` (json) or `NULL` (markdown):

- csv: RFC 4180 quoting, raw text;
- tsv: one line per row, with backslash, tab, newline and carriage return escaped as \\\\, \\t, \\n, \\r (the
  PostgreSQL text format), so a value can never break a line;
- json: JSON Lines, one object per row (`jq` reads it as a stream), keys in the query's column order (a column
  name given twice is refused: the object would keep one value); values
  that JSON cannot hold (dates, decimals, blobs) as strings, NaN and infinities as null;
- markdown: a GitHub table, `|` escaped, line breaks as `<br>`, control characters shown as escapes.
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Sequence
from typing import Any, TextIO

FORMATS = ("table", "csv", "tsv", "json", "markdown")


def _json_value(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, (list, tuple)):
        return [_json_value(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _json_value(x) for k, x in v.items()}
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return str(v)


def _tsv_value(v: Any) -> str:
    if v is None:
        return ""
    return str(v).replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def printable(text: str) -> str:
    """Control characters shown as escapes: generation text may hold terminal escape sequences (clear screen,
    window title, hyperlinks) that must not reach the terminal. Newlines and tabs stay; csv/tsv/json keep raw text."""
    return "".join(c if c in "\n\t" or not (ord(c) < 32 or 0x7F <= ord(c) < 0xA0) else
                   (f"\\x{ord(c):02x}" if ord(c) < 0x100 else c) for c in text)


def _markdown_value(v: Any) -> str:
    if v is None:
        return "NULL"
    return printable(str(v)).replace("|", "\\|").replace("\r\n", "<br>").replace("\n", "<br>").replace("\t", " ")


def write_rows(cols: Sequence[str], rows: Sequence[Sequence[Any]], fmt: str, out: TextIO) -> None:
    """Write a header and rows in one of the pipe formats (see the module docstring)."""
    if fmt == "csv":
        w = csv.writer(out, lineterminator="\n")
        w.writerow(cols)
        w.writerows([["" if v is None else v for v in r] for r in rows])
    elif fmt == "tsv":
        for r in [list(cols), *rows]:
            out.write("\t".join(_tsv_value(v) for v in r) + "\n")
    elif fmt == "json":
        twice = sorted({c for c in cols if list(cols).count(c) > 1})
        if twice:  # one object per row: a repeated key would keep only its last value
            from ingest.errors import UserError

            raise UserError(f"--format json needs distinct column names, but the result names {', '.join(twice)} "
                            "more than once (a select * over a join?); name them apart with AS, or use --format csv")
        for r in rows:
            out.write(json.dumps({c: _json_value(v) for c, v in zip(cols, r)}, ensure_ascii=False,
                                 allow_nan=False) + "\n")
    elif fmt == "markdown":
        out.write("| " + " | ".join(_markdown_value(c) for c in cols) + " |\n")
        out.write("|" + "---|" * len(cols) + "\n")
        for r in rows:
            out.write("| " + " | ".join(_markdown_value(v) for v in r) + " |\n")
    else:
        raise ValueError(f"unknown format {fmt!r}")
