"""The licence of a document, from its text and from a licence field of its metadata.

Two libraries, no hand-written licence patterns:

* `license-expression` (aboutcode, the expression parser of ScanCode) parses and normalises SPDX license
  expressions: every `SPDX-License-Identifier:` line of the text, and a metadata licence field
  (`apache-2.0` -> `Apache-2.0`, `GPL-2.0+` -> `GPL-2.0-or-later`); an unknown key is kept out, never guessed.
* `licenseclassifier` (a pure-Python port of Google's licensecheck, 693 SPDX licences) finds full licence
  texts and licence headers with their character offsets. Every region it matches is kept (coverage
  threshold 0): a code file whose first 30 lines are an Apache header is covered ~5%, and that header is its
  licence. `coverage` says how much of the text the matched regions cover (1.0: a licence file).

ScanCode itself was measured and not chosen (docs/provenance.md, BENCHMARKS.md): a 126 MB wheel with 75
packages and 1.4 GB of memory, against 1.7 MB with no dependencies here; the two agree on 137 of the tiny
sandbox's 144 documents, at 92x the CPU for ScanCode.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass

# Text matching reads the first this many characters of a document: licence headers and licence files sit
# there, and a multi-megabyte file would otherwise cost seconds. SPDX identifier lines are read everywhere.
TEXT_MATCH_CHARS = 262_144

_SPDX_LINE = re.compile(r"SPDX-License-Identifier:\s*([^\n\r]*)")
# an identifier line ends at a comment closer or a quote (`/* SPDX-License-Identifier: MIT */`, `"MIT",`)
_LINE_END = re.compile(r"\*/|-->|\"|'|\s#|;|,\s*$")


@dataclass(frozen=True)
class LicenceFinding:
    """The licence of one text. `expression` is an SPDX expression (ids joined with AND, in first-seen
    order), None when nothing was found; `evidence` says where it came from: `spdx_identifier` (an
    `SPDX-License-Identifier:` line), `licence_text` (a licence text or header), `both` or None."""

    expression: str | None
    ids: tuple[str, ...]
    evidence: str | None
    coverage: float  # share of the (matched part of the) text covered by licence-text regions
    truncated: bool  # text matching read only the first TEXT_MATCH_CHARS characters


@functools.lru_cache(maxsize=1)
def _licensing():
    from license_expression import get_spdx_licensing

    return get_spdx_licensing()


def normalize_expression(value: str | None) -> str | None:
    """An SPDX expression normalised by license-expression (`apache-2.0 OR mit` -> `Apache-2.0 OR MIT`), or
    None when `value` is empty or holds a key that is not an SPDX id (`MIT license`, `Proprietary`)."""
    if value is None or not str(value).strip():
        return None
    try:
        parsed = _licensing().parse(str(value).strip(), validate=True)
    except Exception:  # noqa: BLE001 - license-expression raises several error types for a bad expression
        return None
    return None if parsed is None else parsed.render()


def _expression_ids(expression: str) -> list[str]:
    return list(_licensing().license_keys(_licensing().parse(expression)))


def spdx_identifiers(text: str) -> list[str]:
    """The normalised expressions of every `SPDX-License-Identifier:` line, in order, repeats removed."""
    out: list[str] = []
    for m in _SPDX_LINE.finditer(text):
        raw = _LINE_END.split(m.group(1), maxsplit=1)[0].strip()
        expr = normalize_expression(raw)
        if expr is not None and expr not in out:
            out.append(expr)
    return out


def licence_text_ids(text: str) -> tuple[list[str], float]:
    """SPDX ids of the licence texts and headers licenseclassifier finds (first-seen order) and the share
    of the text their regions cover."""
    from licenseclassifier import identify_license

    if not text.strip():
        return [], 0.0
    matches = identify_license(text, coverage_threshold=0.0)
    ids: list[str] = []
    for m in matches:
        if m.id not in ids:
            ids.append(m.id)
    covered = sum(max(0, m.end - m.start) for m in matches)
    return ids, min(1.0, covered / len(text))


def _join(ids: Iterable[str]) -> str | None:
    ids = list(ids)
    if not ids:
        return None
    if len(ids) == 1:
        return ids[0]
    return " AND ".join(f"({i})" if " " in i else i for i in ids)


def detect_licence(text: str) -> LicenceFinding:
    """The licence of a document's text: its SPDX identifier lines and the licence texts it contains."""
    declared = spdx_identifiers(text)
    head = text[:TEXT_MATCH_CHARS]
    found, coverage = licence_text_ids(head)
    parts: list[str] = list(declared)
    seen = {i for e in declared for i in _expression_ids(e)}
    for i in found:
        if i not in seen:
            parts.append(i)
            seen.add(i)
    evidence = None
    if declared and found:
        evidence = "both"
    elif declared:
        evidence = "spdx_identifier"
    elif found:
        evidence = "licence_text"
    expr = normalize_expression(_join(parts)) if parts else None
    ids = tuple(_expression_ids(expr)) if expr else ()
    return LicenceFinding(expr, ids, evidence, round(coverage, 4), len(text) > TEXT_MATCH_CHARS)


def versions() -> str:
    """The detectors' versions, written with every row (a new version may find other licences)."""
    from importlib.metadata import version

    return f"license-expression {version('license-expression')}; licenseclassifier {version('licenseclassifier')}"
