"""`normalize_document` of an ASCII window compiled with numba (`nogil`), for the exact_full_normalized tier.

Why: the tier test normalizes every retrieved window whose whitespace-free text holds the generation's (on
respaced text, most of them): NFKC and three regular-expression passes over ~1,500 tokens, under the GIL,
~10% of a trace there. On ASCII text NFKC is the identity, so `normalize_document` is a whitespace rewrite
that a single scan does exactly: CRLF and lone CR -> LF; runs of spaces and tabs -> one space; the spaces
next to a newline dropped (`" *\\n *"`: after the first rewrite every space run is one space); three or more
newlines -> two; then str.strip()'s ASCII whitespace (space, \\t \\n \\v \\f \\r, \\x1c-\\x1f) cut at both ends.
Tests compare it with `normalize_document` on random ASCII text (tests/python/test_trace_nogil.py).
"""

from __future__ import annotations

import unicodedata
from typing import Any

import numpy as np

from ingest import kernelgate

njit, _LOAD_ERROR = kernelgate.load_numba()
_checked = False


def _strip_space(c: int) -> bool:
    return c == 32 or 9 <= c <= 13 or 28 <= c <= 31


def normalize_ascii(buf: Any) -> Any:
    """`normalize_document` of ASCII bytes, as a new uint8 array."""
    n = buf.shape[0]
    a = np.empty(n, dtype=np.uint8)
    m = 0
    i = 0
    in_space = False
    while i < n:  # CRLF / CR -> LF, [ \t]+ -> " "
        c = buf[i]
        if c == 13:
            a[m] = 10
            m += 1
            in_space = False
            i += 2 if i + 1 < n and buf[i + 1] == 10 else 1
            continue
        if c == 32 or c == 9:
            if not in_space:
                a[m] = 32
                m += 1
                in_space = True
        else:
            a[m] = c
            m += 1
            in_space = False
        i += 1
    b = np.empty(m, dtype=np.uint8)
    k = 0
    for j in range(m):  # " *\n *" -> "\n": every (single) space beside a newline goes
        if a[j] == 32 and ((j > 0 and a[j - 1] == 10) or (j + 1 < m and a[j + 1] == 10)):
            continue
        b[k] = a[j]
        k += 1
    c2 = np.empty(k, dtype=np.uint8)
    r = 0
    run = 0
    for j in range(k):  # \n{3,} -> \n\n
        if b[j] == 10:
            run += 1
            if run > 2:
                continue
        else:
            run = 0
        c2[r] = b[j]
        r += 1
    lo = 0
    hi = r
    while lo < hi and _strip_space(c2[lo]):
        lo += 1
    while hi > lo and _strip_space(c2[hi - 1]):
        hi -= 1
    return c2[lo:hi].copy()


PYTHON_KERNELS = {"normalize_ascii": normalize_ascii}

kernelgate.compile_all(globals(), ("_strip_space", "normalize_ascii"))


def _self_check() -> bool:
    return normalize_ascii(np.frombuffer(b" a\t \r\n\n\n b  c \x0b", dtype=np.uint8)).tobytes() == b"a\n\nb c"


def available() -> bool:
    """Whether the compiled normalization loads and answers a tiny case right; checked once per process."""
    return kernelgate.checked(globals(), _self_check, "normalization")


def normalized_holds(norm_gen: bytes, window: str, raw: bytes | None = None) -> bool | None:
    """Whether `norm_gen` (a normalized generation, UTF-8) occurs in `normalize_document(window)`,
    or None when this cannot answer (numba missing, or a window that NFKC would change): then normalize in
    Python. `raw`: the window's UTF-8 bytes, when the caller has them.

    A non-ASCII window that is already NFKC-normal (`unicodedata.is_normalized`, a C quick check) is
    answered here too: NFKC is then the identity, and the other rewrites of `normalize_document` touch ASCII
    characters only (CR, LF, space, tab), which are single bytes in UTF-8 that no multi-byte character
    contains, so the scan over the UTF-8 bytes rewrites exactly the same characters. Only str.strip() differs
    (it also strips non-ASCII whitespace at the ends), which cannot change containment: the normalized
    generation is itself stripped, so it neither starts nor ends with whitespace (or is empty)."""
    if not available():
        return None
    if raw is None:
        if window.isascii():
            raw = window.encode("ascii")
        elif unicodedata.is_normalized("NFKC", window):
            raw = window.encode("utf-8", "surrogatepass")
        else:
            return None
    elif not window.isascii() and not unicodedata.is_normalized("NFKC", window):
        return None
    return norm_gen in normalize_ascii(np.frombuffer(raw, dtype=np.uint8)).tobytes()
