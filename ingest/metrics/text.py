"""Per-text checks of the PropMe metrics (docs/propme-method.md, section 4). One definition each.

SQL reaches them as DuckDB UDFs (`ingest.metrics.dbt_plugin`), with every threshold passed in as an
argument so that the thresholds stay dbt vars. All functions return None for a None text.

Definitions (the method's wording, made exact):

- letter share = letters / non-space characters. A *letter* is a Unicode word character that is not a digit
  or an underscore (Python `re`: `[^\\W\\d_]`); a *space* is any Unicode whitespace. A text without a
  non-space character has no letter share (None); both checks that use it are then False.
- degenerate: zlib (level 9) compressed bytes / raw UTF-8 bytes < `max_compression` AND letter share <
  `max_letter_share`. Empty text is not degenerate.
- code-like: (>= `min_lines` code-like lines AND code-like lines >= `min_line_share` of the non-empty lines)
  OR letter share < `max_letter_share`. Lines are split on "\\n"; a line is non-empty if it has a
  non-space character. A non-empty line is code-like when (after leading spaces/tabs) it starts like code
  (`import `, `from X import `, `#include`, `#define`, `def `, `class `, `public `, `private `, `static `,
  `return`, `@name`, `//`, `/*`, `{`, `}`, `<?php`, `<html`, `SELECT `, `var `, `const `, `let `,
  `print(`, `console.`, `System.`, `#`), or is a Python control line (`if/elif/else/for/while/try/except/
  finally/with/def/class/async/match/case` ... ending in `:`), or an assignment (`name = ...`, `a.b[i] += ...`,
  not `==`), or is indented by 4 spaces or a tab, or starts with a LaTeX command (`\\name`), or ends in `;`,
  `{` or `}` (trailing spaces ignored).
- repetition loop (for a span): collapse whitespace (runs of Unicode whitespace -> one space, stripped),
  take the UTF-8 bytes b (n bytes); a loop if for some period p in [1, min(max_period, n // min_repeats)]
  the number of positions i in [0, n - p) with b[i] == b[i + p] is >= `min_share` * (n - p), compared
  exactly (the share is read as a decimal fraction). SQL applies it only to spans of >= `loop_min_tokens`.
- blank: empty or only Unicode whitespace (`str.strip()` leaves nothing). Neither degenerate nor code-like
  catches it (it has no letter share), so a whitespace output that occurs in the corpus is a full match.
- targeted extraction hit: whitespace-normalize both (runs of whitespace -> one space, stripped); the
  generation starts with the true continuation. An empty true continuation gives None.

Shares are compared as exact fractions (`Fraction(str(x))`): 0.9 * 70 is 63.00000000000001 in floating
point, which would turn a 63-of-70 match into a miss.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence
from fractions import Fraction
from functools import lru_cache

import numpy as np

_WS = re.compile(r"\s+")
_NON_LETTER = re.compile(r"[\W\d_]+")
_ASCII_SPACE = bytes(c for c in range(128) if chr(c).isspace())
_ASCII_NON_LETTER = bytes(c for c in range(128) if not re.fullmatch(r"[^\W\d_]", chr(c)))

_CODE_START = (
    r"import\s|from\s+\S+\s+import\s|\#include|\#define|def\s|class\s|public\s|private\s|static\s|return\b"
    r"|@[A-Za-z_]|//|/\*|[{}]|<\?php|<html|SELECT\s|var\s|const\s|let\s|print\(|console\.|System\.|\#"
)
_ASSIGNMENT = r"[A-Za-z_][\w.]*(?:\[[^\]\n]*\])?[ \t]*(?:\*\*|//|<<|>>|[-+*/%|&^:])?=(?!=)"
# what a code-like line may start with (after leading spaces/tabs): code, an assignment, a LaTeX command
_CODE_HEAD = re.compile(rf"[ \t]*(?:{_CODE_START}|{_ASSIGNMENT}|\\[A-Za-z]+)")
_PY_CONTROL = re.compile(r"[ \t]*(?:if|elif|else|for|while|try|except|finally|with|def|class|async|match|case)\b")


@lru_cache(maxsize=64)
def _fraction(x: float) -> Fraction:
    return Fraction(str(x))


def collapse_whitespace(text: str) -> str:
    """Runs of Unicode whitespace -> one space; leading and trailing whitespace removed."""
    return " ".join(text.split())


def letter_share(text: str | None) -> float | None:
    """Letters / non-space characters (None for a text without non-space characters)."""
    if text is None:
        return None
    if text.isascii():  # the same definition, by byte deletion (C speed) for the common case
        raw = text.encode("ascii")
        non_space = len(raw.translate(None, _ASCII_SPACE))
        letters = len(raw.translate(None, _ASCII_NON_LETTER))
    else:
        non_space = len(_WS.sub("", text))
        letters = len(_NON_LETTER.sub("", text))
    if non_space == 0:
        return None
    return letters / non_space


def compression_ratio(text: str | None) -> float | None:
    """zlib (level 9) compressed size / raw UTF-8 size (None for an empty text)."""
    if text is None:
        return None
    raw = text.encode("utf-8")
    if not raw:
        return None
    return len(zlib.compress(raw, 9)) / len(raw)


def is_degenerate(text: str | None, max_compression: float = 0.1, max_letter_share: float = 0.5) -> bool | None:
    if text is None:
        return None
    share = letter_share(text)
    if share is None or share >= max_letter_share:
        return False  # cheap test first: zlib only runs on the few texts with few letters
    ratio = compression_ratio(text)
    return ratio is not None and ratio < max_compression


def is_code_line(line: str) -> bool:
    """One line (without its newline) looks like code; see the module docstring for the rules."""
    stripped = line.strip()
    if not stripped:
        return False
    if line.startswith(("    ", "\t")) or stripped[-1] in ";{}":
        return True
    if stripped[-1] == ":" and _PY_CONTROL.match(line):
        return True
    return _CODE_HEAD.match(line) is not None


def code_line_counts(text: str) -> tuple[int, int]:
    """(code-like lines, non-empty lines)."""
    code = nonempty = 0
    for line in text.split("\n"):
        if line and not line.isspace():
            nonempty += 1
            code += is_code_line(line)
    return code, nonempty


def is_code_like(text: str | None, min_lines: int = 3, min_line_share: float = 0.3,
                 max_letter_share: float = 0.5) -> bool | None:
    if text is None:
        return None
    code, nonempty = code_line_counts(text)
    share = _fraction(min_line_share)
    if code >= min_lines and nonempty > 0 and code * share.denominator >= share.numerator * nonempty:
        return True
    ls = letter_share(text)
    return ls is not None and ls < max_letter_share


def is_loop(text: str | None, min_share: float = 0.9, max_period: int = 200, min_repeats: int = 3) -> bool | None:
    """The reference definition (one text at a time); `loop_flags` is the batched form used by SQL."""
    if text is None:
        return None
    b = collapse_whitespace(text).encode("utf-8")
    n = len(b)
    share = _fraction(min_share)
    for p in range(1, min(max_period, n // min_repeats) + 1):
        matches = sum(1 for i in range(n - p) if b[i] == b[i + p])
        if matches * share.denominator >= share.numerator * (n - p):
            return True
    return False


def loop_flags(texts: Sequence[str | None], min_share: float = 0.9, max_period: int = 200,
               min_repeats: int = 3, group: int = 128) -> list[bool | None]:
    """`is_loop` for many texts at once (same result, vectorized with numpy).

    Texts are sorted by byte length and taken `group` at a time into a padded matrix whose padding is
    distinct per column (a padded position never equals anything).
    1. An exact necessary condition rejects most texts cheaply. If period p has at most e mismatches, every
       4-byte window starting at i >= p equals the one at i - p unless it covers one of the e mismatches, so
       the text has at most min(p, n - 3) + 4 e distinct 4-byte windows. A text with more distinct windows
       than that bound for every allowed p cannot be a loop.
    2. The rest get the full count: for each period p, one comparison of the matrix with itself shifted by p
       counts the matches of every row.
    """
    out: list[bool | None] = [None] * len(texts)
    share = _fraction(min_share)
    num, den = share.numerator, share.denominator
    encoded: list[tuple[int, bytes]] = []
    for i, t in enumerate(texts):
        if t is None:
            continue
        b = " ".join(t.split()).encode("utf-8")
        if min(max_period, len(b) // min_repeats) < 1:
            out[i] = False
        else:
            encoded.append((i, b))
    encoded.sort(key=lambda x: len(x[1]))
    for start in range(0, len(encoded), group):
        chunk = encoded[start:start + group]
        for (i, _), h in zip(chunk, _loop_chunk([b for _, b in chunk], num, den, max_period, min_repeats)):
            out[i] = bool(h)
    return out


def _loop_chunk(chunk: list[bytes], num: int, den: int, max_period: int, min_repeats: int, k: int = 4) -> np.ndarray:
    rows = len(chunk)
    lengths = np.array([len(b) for b in chunk], dtype=np.int64)
    periods = np.minimum(max_period, lengths // min_repeats)
    width, pmax = int(lengths.max()), int(periods.max())
    dtype = np.int16 if width + pmax < 30000 else np.int32
    mat = np.broadcast_to(-1 - np.arange(width + pmax, dtype=dtype), (rows, width + pmax)).copy()
    for r, b in enumerate(chunk):
        mat[r, :len(b)] = np.frombuffer(b, dtype=np.uint8)
    # step 1: distinct k-byte windows <= max over allowed p of [min(p, n - k + 1) + k e(p)]
    p_range = np.arange(1, pmax + 1)
    span = lengths[:, None] - p_range[None, :]  # n - p
    mism = span - (num * span + den - 1) // den  # most mismatches a loop of period p may have
    bound = np.minimum(p_range[None, :], lengths[:, None] - k + 1) + k * mism
    bound = np.where(p_range[None, :] <= periods[:, None], bound, -1).max(axis=1)
    if width >= k:
        u8 = np.where(mat[:, :width] >= 0, mat[:, :width], 0).astype(np.uint32)
        w = width - k + 1
        codes = u8[:, :w] << 24 | u8[:, 1:w + 1] << 16 | u8[:, 2:w + 2] << 8 | u8[:, 3:w + 3]
        # positions past a row's last window repeat its first window: they add no distinct value
        codes = np.where(np.arange(w)[None, :] < (lengths - k + 1)[:, None], codes, codes[:, :1])
        codes.sort(axis=1)
        distinct = 1 + np.count_nonzero(codes[:, 1:] != codes[:, :-1], axis=1)
        distinct = np.where(lengths >= k, distinct, 0)
    else:
        distinct = np.zeros(rows, dtype=np.int64)
    hit = np.zeros(rows, dtype=bool)
    cand = np.flatnonzero(distinct <= bound)
    if cand.size == 0:
        return hit
    # step 2: the exact count for the candidates
    sub, sub_len, sub_per = mat[cand], lengths[cand], periods[cand]
    left = sub[:, :width]
    found = np.zeros(cand.size, dtype=bool)
    for p in range(1, int(sub_per.max()) + 1):
        matches = np.count_nonzero(left == sub[:, p:p + width], axis=1)
        found |= (matches * den >= num * (sub_len - p)) & (p <= sub_per)
    hit[cand] = found
    return hit


def is_blank(text: str | None) -> bool | None:
    """Empty or only (Unicode) whitespace. Such an output is a real result of the model that reproduces nothing:
    the marts never count it as a match (PropMe's code strips outputs before tracing) but keep it in every
    denominator, and show its share (`blank_rate`) and FMR without blank outputs (`fmr_nonblank`)."""
    if text is None:
        return None
    return not text.strip()


def targeted_hit(text: str | None, true_continuation: str | None) -> bool | None:
    """The generation, whitespace-normalized, starts with the true continuation, whitespace-normalized."""
    if text is None or true_continuation is None:
        return None
    truth = collapse_whitespace(true_continuation)
    if not truth:
        return None
    return collapse_whitespace(text).startswith(truth)
