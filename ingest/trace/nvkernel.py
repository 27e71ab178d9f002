"""Near-verbatim recall compiled with numba (`nogil`): word splitting, difflib's matching blocks and the two
merge passes in one call, so threads tracing different generations compute it in parallel.

Why: cydifflib (a Cython port of difflib) holds the GIL for the whole match, and nv-recall with the word
normalization of each window was ~25-30% of a trace: with it under the GIL, `lmaudit trace --threads 2` ran
at 1.0-1.3x of one thread (BENCHMARKS.md). The algorithm is `ingest.trace.nvrecall.nv_recall_words` step by
step; difflib with `autojunk=False` and no junk function reduces to the textbook longest-match recursion:

* words are compared as UTF-8 byte strings (equal words <=> equal bytes); each distinct word gets a small
  integer id (a 64-bit FNV-1a hash into an open-addressing table, with the bytes compared on every hit: a collision
  gives status 1 and the caller falls back to the Python path, so no answer ever depends on a hash);
* `find_longest_match(alo, ahi, blo, bhi)`: for each i, the lengths of matches ending at (i, j) for every
  position j of a[i] in b (ascending), keeping the first strictly longer one; the extension loops of difflib
  cannot extend it without junk or popular words, and run anyway;
* `get_matching_blocks`: the same LIFO queue, blocks sorted, adjacent blocks collapsed;
* the merge passes and the recall of `nvrecall._merge`.

Inputs: the generation's words joined by single spaces (UTF-8) and the document either the same way or, for
an ASCII window, its raw bytes with `lower_doc` (ASCII lowercasing; str.split's ASCII whitespace is space,
\\t \\n \\v \\f \\r and \\x1c-\\x1f): both exactly what `normalize_words` gives. Tests compare with difflib and
with `nv_recall_words` (tests/python/test_trace_nogil.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ingest import kernelgate

njit, _LOAD_ERROR = kernelgate.load_numba()
_checked = False


def _is_space(c: int) -> bool:
    return c == 32 or 9 <= c <= 13 or 28 <= c <= 31


def _split(buf: Any, lower: bool, starts: Any, ends: Any) -> int:
    """Word boundaries of `buf` (ASCII whitespace); lowercases A-Z in place when `lower`. Returns the count."""
    n = 0
    i = 0
    m = buf.shape[0]
    while i < m:
        while i < m and _is_space(buf[i]):
            i += 1
        if i >= m:
            break
        s = i
        while i < m and not _is_space(buf[i]):
            if lower and 65 <= buf[i] <= 90:
                buf[i] += 32
            i += 1
        starts[n] = s
        ends[n] = i
        n += 1
    return n


def _ids(buf: Any, starts: Any, ends: Any, n: int, keys: Any, vals: Any, first_buf: Any, first_s: Any,
         first_e: Any, nxt: int, out: Any, owner: int, owners: Any) -> int:
    """Ids of n words of `buf` into `out`; keys/vals: an open-addressing table (linear probing, size a power
    of two, keys -1 where free) from a word's 63-bit hash to its id, the same map as a dict keyed by the
    hash but without a typed Dict's per-operation cost; first_* remember which buffer
    (owners[id]: 0 generation, 1 document) and where each id was first seen. Returns the next free id, or
    -1 on a hash collision."""
    for w in range(n):
        s = starts[w]
        e = ends[w]
        h = np_uint64(14695981039346656037)
        for i in range(s, e):
            h = (h ^ np_uint64(buf[i])) * np_uint64(1099511628211)
        k = np_int64(h & np_uint64(0x7FFFFFFFFFFFFFFF))
        mask = keys.shape[0] - 1
        slot = k & mask
        while keys[slot] != -1 and keys[slot] != k:
            slot = (slot + 1) & mask
        if keys[slot] == k:
            t = vals[slot]
            other = first_buf[0] if owners[t] == 0 else first_buf[1]
            fs = first_s[t]
            fe = first_e[t]
            if fe - fs != e - s:
                return -1
            for i in range(e - s):
                if other[fs + i] != buf[s + i]:
                    return -1
            out[w] = t
        else:
            keys[slot] = k
            vals[slot] = nxt
            first_s[nxt] = s
            first_e[nxt] = e
            owners[nxt] = owner
            out[w] = nxt
            nxt += 1
    return nxt


def _longest(a: Any, b_pos: Any, b_off: Any, alo: int, ahi: int, blo: int, bhi: int, prev: Any, cur: Any,
             ptouch: Any, ctouch: Any, b: Any) -> tuple[int, int, int]:
    """difflib's find_longest_match without junk. prev/cur[j + 1] hold the length of the match ending at
    (i - 1, j) / (i, j); *touch list the entries set, to clear them."""
    besti = alo
    bestj = blo
    bestsize = 0
    np_ = 0
    for i in range(alo, ahi):
        nc = 0
        x = a[i]
        for p in range(b_off[x], b_off[x + 1]):
            j = b_pos[p]
            if j < blo:
                continue
            if j >= bhi:
                break
            k = prev[j] + 1
            cur[j + 1] = k
            ctouch[nc] = j + 1
            nc += 1
            if k > bestsize:
                besti = i - k + 1
                bestj = j - k + 1
                bestsize = k
        for t in range(np_):
            prev[ptouch[t]] = 0
        # swap
        for t in range(nc):
            prev[ctouch[t]] = cur[ctouch[t]]
            cur[ctouch[t]] = 0
            ptouch[t] = ctouch[t]
        np_ = nc
    for t in range(np_):
        prev[ptouch[t]] = 0
    while besti > alo and bestj > blo and a[besti - 1] == b[bestj - 1]:
        besti -= 1
        bestj -= 1
        bestsize += 1
    while besti + bestsize < ahi and bestj + bestsize < bhi and a[besti + bestsize] == b[bestj + bestsize]:
        bestsize += 1
    return besti, bestj, bestsize


def matching_blocks(a: Any, b: Any, n_ids: int) -> Any:
    """difflib.SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks() of two int64 id arrays
    (ids < n_ids), without the final (len(a), len(b), 0): an (n, 3) int64 array."""
    la = a.shape[0]
    lb = b.shape[0]
    cnt = np.zeros(n_ids + 1, dtype=np.int64)
    for j in range(lb):
        cnt[b[j] + 1] += 1
    for t in range(n_ids):
        cnt[t + 1] += cnt[t]
    b_off = cnt.copy()
    b_pos = np.empty(lb, dtype=np.int64)
    fill = cnt[:n_ids].copy()
    for j in range(lb):
        b_pos[fill[b[j]]] = j
        fill[b[j]] += 1
    prev = np.zeros(lb + 1, dtype=np.int64)
    cur = np.zeros(lb + 1, dtype=np.int64)
    ptouch = np.empty(lb + 1, dtype=np.int64)
    ctouch = np.empty(lb + 1, dtype=np.int64)
    cap = 2 * min(la, lb) + 4
    queue = np.empty((cap, 4), dtype=np.int64)
    blocks = np.empty((min(la, lb) + 1, 3), dtype=np.int64)
    nq = 1
    queue[0, 0] = 0
    queue[0, 1] = la
    queue[0, 2] = 0
    queue[0, 3] = lb
    nb = 0
    while nq > 0:
        nq -= 1
        alo = queue[nq, 0]
        ahi = queue[nq, 1]
        blo = queue[nq, 2]
        bhi = queue[nq, 3]
        i, j, k = _longest(a, b_pos, b_off, alo, ahi, blo, bhi, prev, cur, ptouch, ctouch, b)
        if k:
            blocks[nb, 0] = i
            blocks[nb, 1] = j
            blocks[nb, 2] = k
            nb += 1
            if alo < i and blo < j:
                queue[nq, 0] = alo
                queue[nq, 1] = i
                queue[nq, 2] = blo
                queue[nq, 3] = j
                nq += 1
            if i + k < ahi and j + k < bhi:
                queue[nq, 0] = i + k
                queue[nq, 1] = ahi
                queue[nq, 2] = j + k
                queue[nq, 3] = bhi
                nq += 1
    order = np.argsort(blocks[:nb, 0], kind="mergesort")  # blocks never share an i
    out = np.empty((nb, 3), dtype=np.int64)
    n = 0
    i1 = 0
    j1 = 0
    k1 = 0
    for t in range(nb):
        i2 = blocks[order[t], 0]
        j2 = blocks[order[t], 1]
        k2 = blocks[order[t], 2]
        if i1 + k1 == i2 and j1 + k1 == j2:
            k1 += k2
        else:
            if k1:
                out[n, 0] = i1
                out[n, 1] = j1
                out[n, 2] = k1
                n += 1
            i1 = i2
            j1 = j2
            k1 = k2
    if k1:
        out[n, 0] = i1
        out[n, 1] = j1
        out[n, 2] = k1
        n += 1
    return out[:n]


def _merge(blk: Any, n: int, gap: int, align: int, min_len: int) -> int:
    """`nvrecall._merge` in place on rows (g0, g1, d0, d1, m) of `blk`; returns the rows kept."""
    w = 0
    for r in range(n):
        if w > 0:
            gap_g = blk[r, 0] - blk[w - 1, 1]
            gap_d = blk[r, 2] - blk[w - 1, 3]
            if max(gap_g, gap_d) <= gap and abs(gap_g - gap_d) <= align:
                blk[w - 1, 1] = blk[r, 1]
                blk[w - 1, 3] = blk[r, 3]
                blk[w - 1, 4] += blk[r, 4]
                continue
        for c in range(5):
            blk[w, c] = blk[r, c]
        w += 1
    kept = 0
    for r in range(w):
        if blk[r, 4] >= min_len:
            for c in range(5):
                blk[kept, c] = blk[r, c]
            kept += 1
    return kept


def nv_counts(gen: Any, doc: Any, lower_doc: bool, params: Any) -> tuple[int, int, int, int]:
    """(status, matched words, generation words, document words) of nv-recall; `doc` is modified when
    `lower_doc` (pass a copy). `params` = (gap1, align1, min1, gap2, align2, min2), or all -1 for the
    adaptive ones, which the caller passes instead (they depend on the word count: see `nv_recall_fast`).
    status 1: a hash collision (call the Python path)."""
    gs = np.empty(gen.shape[0] // 2 + 1, dtype=np.int64)
    ge = np.empty(gen.shape[0] // 2 + 1, dtype=np.int64)
    ng = _split(gen, False, gs, ge)
    ds = np.empty(doc.shape[0] // 2 + 1, dtype=np.int64)
    de = np.empty(doc.shape[0] // 2 + 1, dtype=np.int64)
    nd = _split(doc, lower_doc, ds, de)
    if ng == 0:
        return 0, 0, 0, nd
    cap = 16
    while cap < 2 * (ng + nd) + 2:  # at most half full
        cap *= 2
    keys = np.full(cap, -1, dtype=np.int64)
    vals = np.empty(cap, dtype=np.int64)
    first_s = np.empty(ng + nd, dtype=np.int64)
    first_e = np.empty(ng + nd, dtype=np.int64)
    owners = np.empty(ng + nd, dtype=np.int64)
    a = np.empty(ng, dtype=np.int64)
    b = np.empty(nd, dtype=np.int64)
    bufs = (gen, doc)
    nxt = _ids(gen, gs, ge, ng, keys, vals, bufs, first_s, first_e, 0, a, 0, owners)
    if nxt < 0:
        return 1, 0, ng, nd
    nxt = _ids(doc, ds, de, nd, keys, vals, bufs, first_s, first_e, nxt, b, 1, owners)
    if nxt < 0:
        return 1, 0, ng, nd
    mb = matching_blocks(a, b, nxt)
    blk = np.empty((mb.shape[0], 5), dtype=np.int64)
    for r in range(mb.shape[0]):
        blk[r, 0] = mb[r, 0]
        blk[r, 1] = mb[r, 0] + mb[r, 2]
        blk[r, 2] = mb[r, 1]
        blk[r, 3] = mb[r, 1] + mb[r, 2]
        blk[r, 4] = mb[r, 2]
    n = _merge(blk, mb.shape[0], params[0], params[1], params[2])
    n = _merge(blk, n, params[3], params[4], params[5])
    matched = 0
    for r in range(n):
        matched += blk[r, 4]
    return 0, matched, ng, nd


def count_words(gen: Any) -> int:
    """Words of a space-joined buffer (the generation's word count, for its adaptive parameters)."""
    n = 0
    inword = False
    for i in range(gen.shape[0]):
        if _is_space(gen[i]):
            inword = False
        elif not inword:
            inword = True
            n += 1
    return n


np_uint64 = np.uint64
np_int64 = np.int64
PYTHON_KERNELS = {"matching_blocks": matching_blocks, "nv_counts": nv_counts}

kernelgate.compile_all(globals(), ("_is_space", "_split", "_ids", "_longest", "matching_blocks", "_merge", "nv_counts", "count_words"))


def _self_check() -> bool:
    g = np.frombuffer(b"a b c d", dtype=np.uint8).copy()
    d = np.frombuffer(b"X A B C D", dtype=np.uint8).copy()
    return tuple(nv_counts(g, d, True, np.array([1, 1, 2, 2, 1, 4], dtype=np.int64))) == (0, 4, 4, 5)


def available() -> bool:
    """Whether the compiled nv-recall loads and answers a tiny case right; checked once per process."""
    return kernelgate.checked(globals(), _self_check, "nv-recall")
