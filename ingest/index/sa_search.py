"""Binary searches over one shard's suffix array, compiled with numba (`nogil`), on raw bytes.

Why: the tracer makes hundreds of suffix-array lookups per generation; in pure Python one binary search
costs ~15 us and holds the GIL, so it dominates on inputs with many short matches and threads cannot run
lookups in parallel. These kernels do the same searches in machine code and release the GIL.

Everything works on bytes, exactly as the C++ engine compares: `toks` is the shard's `tokenized` file and
`table` its suffix array, both as uint8 arrays (read-only maps), `ps` the pointer width in bytes (any width,
5-byte pointers included: little-endian, read byte by byte), `q` the query in index byte form
(little-endian tokens). A suffix is compared on its first len(q) bytes, cut at the end of the file; a
suffix that is a proper prefix of the query sorts before it. Ranks are Python ints (int64).

`available()` says whether numba loaded; if it did not, `IndexEngine` keeps its pure-Python searches (same
results) and warns once. Compiled code is cached on disk (`cache=True`: in `__pycache__` beside this file,
or numba's per-user cache folder when that is read-only), so only the first process after an install or
upgrade pays the compile time (about a second per kernel).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ingest import kernelgate

njit, _LOAD_ERROR = kernelgate.load_numba()
_checked = False


def _ptr(table: Any, ps: int, rank: int) -> int:
    """The byte offset stored at `rank` (little-endian, `ps` bytes)."""
    a = rank * ps
    p = 0
    for i in range(ps - 1, -1, -1):
        p = (p << 8) | int(table[a + i])
    return p


def _before(toks: Any, p: int, q: Any, upper: bool) -> bool:
    """The suffix at byte `p`, cut to len(q) bytes, sorts before q (or equals it, when `upper`)."""
    n = toks.shape[0]
    for i in range(q.shape[0]):
        if p + i >= n:
            return True  # a proper prefix of the query
        a = toks[p + i]
        b = q[i]
        if a != b:
            return a < b
    return upper


def _lcp(toks: Any, p: int, q: Any) -> int:
    """Bytes the suffix at byte `p` shares with q."""
    n = toks.shape[0]
    m = q.shape[0]
    i = 0
    while i < m and p + i < n and toks[p + i] == q[i]:
        i += 1
    return i


def bound(toks: Any, table: Any, ps: int, q: Any, lo: int, hi: int, upper: bool) -> int:
    """First rank in [lo, hi) whose suffix is >= q (> q when `upper`); hi if none."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if _before(toks, _ptr(table, ps, mid), q, upper):
            lo = mid + 1
        else:
            hi = mid
    return lo


def bound_near(toks: Any, table: Any, ps: int, q: Any, lo: int, hi: int, upper: bool, hint: int) -> int:
    """`bound` when the answer is known to be <= hint (lower bound) or >= hint (upper bound): gallop away
    from the hint, then bisect (log2(count) steps instead of log2(hi - lo))."""
    if upper:
        a = max(hint, lo)
        b = hi
        step = 1
        while a < b:
            p = a + step - 1
            if p >= b:
                break
            if _before(toks, _ptr(table, ps, p), q, True):
                a = p + 1
                step *= 2
            else:
                b = p
                break
    else:
        a = lo
        b = min(hint, hi)
        step = 1
        while a < b:
            p = b - step
            if p < a:
                break
            if _before(toks, _ptr(table, ps, p), q, False):
                a = p + 1
                break
            b = p
            step *= 2
    return bound(toks, table, ps, q, a, b, upper)


def find_range(toks: Any, table: Any, ps: int, q: Any, lo: int, hi: int, hint: int) -> tuple[int, int]:
    """The rank range [lo', hi') of q inside [lo, hi); `hint` >= 0: an insertion rank of a longer query
    starting with q (searched outwards from it), -1: none."""
    if hint < 0:
        a = bound(toks, table, ps, q, lo, hi, False)
        return a, bound(toks, table, ps, q, a, hi, True)
    return (bound_near(toks, table, ps, q, lo, hi, False, hint),
            bound_near(toks, table, ps, q, lo, hi, True, hint))


def occurs(toks: Any, table: Any, ps: int, q: Any, lo: int, hi: int) -> bool:
    """Some suffix in [lo, hi) starts with q."""
    r = bound(toks, table, ps, q, lo, hi, False)
    return r < hi and _lcp(toks, _ptr(table, ps, r), q) == q.shape[0]


def longest_prefix(toks: Any, table: Any, ps: int, q: Any, lo: int, hi: int) -> tuple[int, int]:
    """(insertion rank r of q in [lo, hi), the most bytes q shares with the suffix at r - 1 or r, both
    taken only inside [lo, hi))."""
    r = bound(toks, table, ps, q, lo, hi, False)
    best = 0
    for rank in (r - 1, r):
        if lo <= rank < hi:
            n = _lcp(toks, _ptr(table, ps, rank), q)
            if n > best:
                best = n
    return r, best


def _occurs_all(toks: Any, tables: Any, pss: Any, q: Any, b: int, e: int, w: int, flo: Any, fhi: Any) -> bool:
    """tokens[b:e] of the generation occur in some shard (`IndexEngine.occurs_bytes`)."""
    sub = q[b * w:e * w]
    for s in range(flo.shape[1]):
        lo = flo[b, s]
        hi = fhi[b, s]
        if lo == hi:
            continue
        if e - b == 1:
            return True
        if occurs(toks[s], tables[s], pss[s], sub, lo, hi):
            return True
    return False


def _longest_all(toks: Any, tables: Any, pss: Any, q: Any, b: int, w: int, flo: Any, fhi: Any, hints: Any) -> int:
    """n(b) from a full lookup of tokens[b:] (`IndexEngine.longest_prefix_bytes`); hints[b, s] receives the
    insertion rank found in shard s (-1 where no search ran, None in the Python version)."""
    sub = q[b * w:]
    nb = sub.shape[0]
    best = 0
    for s in range(flo.shape[1]):
        hints[b, s] = -1
    for s in range(flo.shape[1]):
        lo = flo[b, s]
        hi = fhi[b, s]
        if lo == hi:
            continue
        if nb == w:
            return 1
        r, n = longest_prefix(toks[s], tables[s], pss[s], sub, lo, hi)
        hints[b, s] = r
        if n == nb:
            return nb // w
        if n // w > best:
            best = n // w
    return best


def longest_matches(toks: Any, tables: Any, pss: Any, q: Any, w: int, flo: Any, fhi: Any,
                    out: Any, hints: Any, looked: Any, stats: Any) -> None:
    """`ingest.trace.matching.longest_matches` in one compiled call, on every shard at once: `toks` and
    `tables` are tuples (one array per shard), `pss` the pointer widths, `q` the generation's bytes,
    flo/fhi[b, s] the first-token range of start b in shard s. Fills out[b] = n(b), hints[b, :] and
    looked[b] (a full lookup ran at b) and adds (starts, skipped_by_bound, probes, full_lookups) to
    `stats`. Same algorithm, step by step, as the Python version (whose docstring explains it)."""
    L = out.shape[0]
    b = 0
    lb = 0
    while b < L:
        if b + lb >= L:
            for k in range(b, L):
                out[k] = L - k
            stats[0] += L - b
            stats[1] += L - b
            break
        stats[0] += 1
        stats[3] += 1
        n = max(lb, _longest_all(toks, tables, pss, q, b, w, flo, fhi, hints))
        looked[b] = True
        out[b] = n
        m = b + n
        if m >= L or n == 0:
            lb = max(n - 1, 0)
            b += 1
            continue
        lo = b + 1
        hi = m
        step = 1
        while True:
            k = m - step
            if k <= b:
                break
            stats[2] += 1
            if _occurs_all(toks, tables, pss, q, k, m + 1, w, flo, fhi):
                hi = k
                step *= 2
            else:
                lo = k + 1
                break
        while lo < hi:
            mid = (lo + hi) // 2
            stats[2] += 1
            if _occurs_all(toks, tables, pss, q, mid, m + 1, w, flo, fhi):
                hi = mid
            else:
                lo = mid + 1
        for k in range(b + 1, hi):
            out[k] = m - k
        stats[0] += hi - b - 1
        stats[1] += hi - b - 1
        lb = m - hi + 1 if hi < m else 0
        b = hi


def find_many(toks: Any, tables: Any, pss: Any, q: Any, w: int, flo: Any, fhi: Any, qb: Any, qe: Any,
              hints: Any, out_lo: Any, out_hi: Any, counts: Any) -> bool:
    """`IndexEngine.find_bytes` of many pieces tokens[qb[i]:qe[i]] of one generation in one call:
    out_lo/out_hi[i, s] = the rank range in shard s, counts[i] = the occurrences in all shards. hints[b, s]:
    an insertion rank of a longer query starting at b (-1: none), as `find_bytes` takes them (the plan's
    hints, one row per start); flo/fhi as in `longest_matches`. False (nothing searched) when a piece is
    empty or outside the sequence."""
    L = flo.shape[0]
    for i in range(qb.shape[0]):
        if qb[i] < 0 or qe[i] <= qb[i] or qe[i] > L:
            return False
    for i in range(qb.shape[0]):
        b = qb[i]
        e = qe[i]
        c = 0
        for s in range(flo.shape[1]):
            lo = flo[b, s]
            hi = fhi[b, s]
            if lo < hi and e - b > 1:
                lo, hi = find_range(toks[s], tables[s], pss[s], q[b * w:e * w], lo, hi, hints[b, s])
            out_lo[i, s] = lo
            out_hi[i, s] = hi
            c += hi - lo
        counts[i] = c
    return True


def plan_rows(dense: Any, q: Any, w: int, flo: Any, fhi: Any) -> int:
    """The first-token ranges of every start of q (tokens of width w) from the dense per-token table
    (`IndexEngine.plan_bytes`): flo/fhi[b, s] = dense[token b, s, 0 / 1]. Returns the first start whose
    token has no complete row yet (any -1, or past the table), or -1 when all are filled. A row is read as
    a whole: another thread may be writing it (front set, back still -1), then it counts as missing."""
    n_shards = dense.shape[1]
    for b in range(flo.shape[0]):
        t = 0
        for k in range(w - 1, -1, -1):
            t = (t << 8) | int(q[b * w + k])
        if t >= dense.shape[0]:
            return b
        for s in range(n_shards):
            lo = dense[t, s, 0]
            hi = dense[t, s, 1]
            if lo < 0 or hi < 0:
                return b
            flo[b, s] = lo
            fhi[b, s] = hi
    return -1


PYTHON_KERNELS = {f.__name__: f for f in (bound, bound_near, find_range, occurs, longest_prefix, longest_matches,
                                          find_many, plan_rows)}

kernelgate.compile_all(globals(), ("_ptr", "_before", "_lcp", "bound", "bound_near", "find_range", "occurs",
                                   "longest_prefix", "_occurs_all", "_longest_all", "longest_matches", "find_many",
                                   "plan_rows"))


def _self_check() -> bool:
    """A tiny index (5 one-byte tokens, suffixes sorted as bytes) with known answers for every kernel the
    engine calls."""
    toks = np.frombuffer(b"\x00\x01\x00\x02\x00", dtype=np.uint8)
    table = np.frombuffer(bytes([4, 0, 2, 1, 3]), dtype=np.uint8)
    q = np.frombuffer(b"\x00\x02", dtype=np.uint8)
    if not (find_range(toks, table, 1, q, 0, 5, -1) == (2, 3) and occurs(toks, table, 1, q, 0, 5)
            and longest_prefix(toks, table, 1, q, 0, 5) == (2, 2)):
        return False
    # q = tokens 0 2 0 (positions 2-4 of the index): first-token ranges 0 -> ranks 0..3, 2 -> rank 4; n(b) = 3, 2, 1
    q3 = np.frombuffer(b"\x00\x02\x00", dtype=np.uint8)
    dense = np.full((3, 1, 2), -1, dtype=np.int64)
    dense[0, 0] = (0, 3)
    dense[2, 0] = (4, 5)
    flo = np.zeros((3, 1), dtype=np.int64)
    fhi = np.zeros((3, 1), dtype=np.int64)
    if plan_rows(dense, q3, 1, flo, fhi) != -1 or flo[:, 0].tolist() != [0, 4, 0] or fhi[:, 0].tolist() != [3, 5, 3]:
        return False
    hints = np.full((3, 1), -1, dtype=np.int64)
    out = np.zeros(3, dtype=np.int64)
    stats = np.zeros(4, dtype=np.int64)
    longest_matches((toks,), (table,), np.array([1], dtype=np.int64), q3, 1, flo, fhi, out, hints,
                    np.zeros(3, dtype=np.bool_), stats)
    if out.tolist() != [3, 2, 1]:
        return False
    lo = np.zeros((2, 1), dtype=np.int64)
    hi = np.zeros((2, 1), dtype=np.int64)
    cnt = np.zeros(2, dtype=np.int64)
    ok = find_many((toks,), (table,), np.array([1], dtype=np.int64), q3, 1, flo, fhi, np.array([0, 1]),
                   np.array([2, 3]), hints, lo, hi, cnt)
    return bool(ok) and cnt.tolist() == [1, 1] and (lo[0, 0], hi[0, 0], lo[1, 0], hi[1, 0]) == (2, 3, 4, 5)


def available() -> bool:
    """Whether the compiled kernels load: numba imports and the kernels compile (or come from the cache)
    and answer a tiny index correctly; checked once per process (`ingest.kernelgate`)."""
    return kernelgate.checked(globals(), _self_check, "suffix-array searches")


def load_error() -> str | None:
    return _LOAD_ERROR


_warned = False


def warn_unavailable() -> None:
    """Warn once per process that lookups run in pure Python (slower, hold the GIL)."""
    global _warned
    if not _warned:
        _warned = True
        warnings.warn(f"numba could not be loaded ({_LOAD_ERROR}); suffix-array lookups run in pure Python "
                      "(several times slower, no thread parallelism): pip install the numba version pinned in "
                      "pyproject.toml", RuntimeWarning, stacklevel=3)
