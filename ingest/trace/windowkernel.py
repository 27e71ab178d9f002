"""Decoding, match tier and nv-recall of many document windows in one compiled call (numba, `nogil`).

Why: per window the tracer decoded the tokens (a byte-table join), tested the two full-match tiers and ran
nv-recall, each step a Python call holding the GIL between the compiled pieces; with ~60 windows per
generation that glue was a large part of a trace. `scan_windows` does all of it for every new window of a
generation at once, on the windows' index bytes (`IndexEngine.windows_bytes`), and leaves to Python only
what it cannot answer exactly:

* decoding: each token's bytes from the ByteLevel byte table (`tracer._byte_level_table`, as one flat
  array), joined; then strict UTF-8 validation, exactly what Python's `bytes.decode("utf-8")` accepts
  (no overlong forms, no surrogates, nothing above U+10FFFF). A window that is not valid UTF-8 (cut inside a
  character) or holds an id outside the table gets status 0: the tracer decodes it with the tokenizer, as
  `_fast_decoder` does;
* exact_full_raw: the generation's UTF-8 bytes inside the window's (for valid UTF-8, byte containment is
  string containment);
* exact_full_normalized on "simple" windows: ASCII, or non-ASCII whose every non-ASCII character is classed
  (`normalize.plain_chars`: NFKC, lowercasing and splitting leave it as it is, wherever it stands, and the
  typography rewrites at most replace it by ASCII, so both normalizations are ASCII steps on the bytes,
  `_retypeset` doing the rewrites): the whitespace-free prefilter
  of `_Gen.maybe_in`, then `tierkernel.normalize_ascii` and containment (tier 0, "Python decides", for
  any other window);
* nv-recall of simple windows with `nvkernel.nv_counts` (ASCII-lowercased and split there); other windows
  and hash collisions are left to `nv_recall_window`. (Before 2026-12-04 only ASCII windows were simple:
  the NFKC, regex and lowercasing passes over every non-ASCII window, under the GIL, were ~15% of a trace.)

Tests compare every output with the Python path (tests/python/test_trace_windows.py, test_trace_fast.py).
Caveat (docs/footguns.md): numba's on-disk cache of this module is keyed on this file only, so after an edit
of `nvkernel.py` or `tierkernel.py` (or of the class numbers in `normalize.py`, frozen into the compiled code)
the cached `scan_windows` keeps the old callee until this file changes. The table `plain_chars` itself is an
argument, read at every call.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ingest import kernelgate
from ingest.trace import nvkernel, tierkernel
from ingest.trace.nvkernel import nv_counts
from ingest.trace.normalize import DASH, DOUBLE_QUOTE, PLAIN, SINGLE_QUOTE
from ingest.trace.tierkernel import normalize_ascii

njit, _LOAD_ERROR = kernelgate.load_numba()
_checked = False

# tiers (res[:, 2]); 0: not decided here
RAW, NORMALIZED, PARTIAL = 1, 2, 3
# nv status (res[:, 3])
NV_NONE, NV_DONE = 0, 1
# text bytes reserved without counting (ntok x the longest token); past this the decoded size is counted first
_RESERVE_MAX = 1 << 26


def _utf8_ok(a: Any, lo: int, hi: int) -> bool:
    """a[lo:hi] is valid UTF-8 for Python's strict decoder."""
    i = lo
    while i < hi:
        c = a[i]
        if c < 0x80:
            i += 1
            continue
        if 0xC2 <= c <= 0xDF:
            n = 1
            lo2, hi2 = 0x80, 0xBF
        elif c == 0xE0:
            n = 2
            lo2, hi2 = 0xA0, 0xBF
        elif 0xE1 <= c <= 0xEC or 0xEE <= c <= 0xEF:
            n = 2
            lo2, hi2 = 0x80, 0xBF
        elif c == 0xED:
            n = 2
            lo2, hi2 = 0x80, 0x9F
        elif c == 0xF0:
            n = 3
            lo2, hi2 = 0x90, 0xBF
        elif 0xF1 <= c <= 0xF3:
            n = 3
            lo2, hi2 = 0x80, 0xBF
        elif c == 0xF4:
            n = 3
            lo2, hi2 = 0x80, 0x8F
        else:
            return False
        if i + n >= hi:  # the sequence runs past the end
            return False
        b = a[i + 1]
        if b < lo2 or b > hi2:
            return False
        for k in range(2, n + 1):
            b = a[i + k]
            if b < 0x80 or b > 0xBF:
                return False
        i += n + 1
    return True


def _contains(h: Any, hlo: int, hhi: int, nd: Any) -> bool:
    """nd occurs in h[hlo:hhi] (nd non-empty)."""
    m = nd.shape[0]
    if m == 0:
        return True
    first = nd[0]
    last = hhi - m
    i = hlo
    while i <= last:
        if h[i] == first:
            j = 1
            while j < m and h[i + j] == nd[j]:
                j += 1
            if j == m:
                return True
        i += 1
    return False


def _squeezed_contains(h: Any, lo: int, hi: int, nd: Any) -> bool:
    """nd occurs in h[lo:hi] with every ASCII whitespace byte (str.split's: space, \\t-\\r, \\x1c-\\x1f)
    removed: `"".join(window.split())` of an ASCII window."""
    sq = np.empty(hi - lo, dtype=np.uint8)
    k = 0
    for i in range(lo, hi):
        c = h[i]
        if not (c == 32 or 9 <= c <= 13 or 28 <= c <= 31):
            sq[k] = c
            k += 1
    return _contains(sq, 0, k, nd)


def _plain_class(a: Any, lo: int, hi: int, plain: Any) -> int:
    """For the valid UTF-8 a[lo:hi]: 0 when some non-ASCII character is not classed in `plain`
    (`normalize.plain_chars`), 2 when all are and some is a typography character, else 1."""
    out = 1
    i = lo
    while i < hi:
        c = a[i]
        if c < 0x80:
            i += 1
            continue
        if c >= 0xF0:
            cp = ((c & 0x07) << 18) | ((a[i + 1] & 0x3F) << 12) | ((a[i + 2] & 0x3F) << 6) | (a[i + 3] & 0x3F)
            i += 4
        elif c >= 0xE0:
            cp = ((c & 0x0F) << 12) | ((a[i + 1] & 0x3F) << 6) | (a[i + 2] & 0x3F)
            i += 3
        else:
            cp = ((c & 0x1F) << 6) | (a[i + 1] & 0x3F)
            i += 2
        if cp >= plain.shape[0] or plain[cp] == 0:
            return 0
        if plain[cp] != PLAIN:
            out = 2
    return out


def _retypeset(a: Any, lo: int, hi: int, plain: Any) -> Any:
    """a[lo:hi] (valid UTF-8, all classed) with `words_text`'s typography rewrites: each quote to its ASCII
    quote, each run of dashes to one "-"."""
    out = np.empty(hi - lo, dtype=np.uint8)
    k = 0
    i = lo
    dash = False
    while i < hi:
        c = a[i]
        n = 1 if c < 0x80 else 4 if c >= 0xF0 else 3 if c >= 0xE0 else 2
        cls = PLAIN
        if n == 3:  # every typography character is a 3-byte sequence (U+2010-U+2033, U+FE58, U+FE63)
            cls = plain[((c & 0x0F) << 12) | ((a[i + 1] & 0x3F) << 6) | (a[i + 2] & 0x3F)]
        elif n == 2:  # U+00AB, U+00BB
            cls = plain[((c & 0x1F) << 6) | (a[i + 1] & 0x3F)]
        if cls == DASH:
            if not dash:
                out[k] = 45  # -
                k += 1
            dash = True
        else:
            dash = False
            if cls == SINGLE_QUOTE:
                out[k] = 39
                k += 1
            elif cls == DOUBLE_QUOTE:
                out[k] = 34
                k += 1
            else:
                for j in range(n):
                    out[k] = a[i + j]
                    k += 1
        i += n
    return out[:k].copy()


def _text_size(buf: Any, bstart: Any, bend: Any, w: int, toff: Any) -> int:
    """Bytes the byte table gives for the tokens buf[bstart[i]:bend[i]] of every i (ids past it count 0)."""
    ntab = toff.shape[0] - 1
    size = 0
    for i in range(bstart.shape[0]):
        for p in range(bstart[i], bend[i], w):
            t = 0
            for k in range(w - 1, -1, -1):
                t = (t << 8) | int(buf[p + k])
            if t < ntab:
                size += toff[t + 1] - toff[t]
    return size


def _decode(buf: Any, lo: int, hi: int, w: int, tbytes: Any, toff: Any, text: Any, at: int) -> tuple[int, bool, bool]:
    """The bytes of tokens buf[lo:hi] (width w) through the byte table, written at text[at:]: (the end,
    whether they are valid UTF-8 (False also for an id past the table), whether they are ASCII). An invalid
    piece writes nothing."""
    ntab = toff.shape[0] - 1
    start = at
    high = 0  # OR of every byte: no bit 0x80 means ASCII, valid UTF-8 without a check
    for p in range(lo, hi, w):
        t = 0
        for k in range(w - 1, -1, -1):
            t = (t << 8) | int(buf[p + k])
        if t >= ntab:
            return start, False, False
        for j in range(toff[t], toff[t + 1]):
            c = tbytes[j]
            text[at] = c
            high |= c
            at += 1
    if high >= 0x80 and not _utf8_ok(text, start, at):
        return start, False, False
    return at, True, high < 0x80


def scan_windows(buf: Any, bstart: Any, bend: Any, w: int, tbytes: Any, toff: Any, gen: Any, norm_gen: Any,
                 squeezed: Any, nvgen: Any, params: Any, want_nv: Any, res: Any, plain: Any) -> tuple[Any, Any]:
    """Window i is buf[bstart[i]:bend[i]] (tokens of width w, little-endian); want_nv[i]: 0 no nv-recall,
    1 nv-recall, 2 nv-recall unless the tier is partial (an anchor's window); nvgen: the generation's words
    (`PreparedGeneration.buf`, empty when it has none: no nv-recall here); plain: `normalize.plain_chars()`
    as an array (empty: only ASCII windows are normalized here). Fills res[i] = (decoded as valid UTF-8,
    1 ASCII / 2 non-ASCII with plain characters only / 0 other, tier, nv status, matched words, generation
    words, document words) and returns (text bytes of every window concatenated, offsets (n + 1)); an
    undecodable window's text is empty."""
    n = bstart.shape[0]
    ntab = toff.shape[0] - 1
    longest = 0  # the longest token's bytes: room for every window without a counting pass (up to _RESERVE_MAX)
    for t in range(ntab):
        longest = max(longest, toff[t + 1] - toff[t])
    ntok = 0
    for i in range(n):
        ntok += (bend[i] - bstart[i]) // w
    size = ntok * longest
    if size > _RESERVE_MAX:  # long tokens (runs of spaces: 128-512 bytes, ~6 on average): count exactly
        size = _text_size(buf, bstart, bend, w, toff)
    text = np.empty(size, dtype=np.uint8)
    off = np.zeros(n + 1, dtype=np.int64)
    at = 0
    for i in range(n):
        start = at
        at, ok, ascii_ = _decode(buf, bstart[i], bend[i], w, tbytes, toff, text, at)
        off[i + 1] = at
        for col in range(7):
            res[i, col] = 0
        if not ok:
            continue
        res[i, 0] = 1
        # plain: the normalizations are ASCII steps on the bytes (see `normalize.plain_chars`)
        cls = 1 if ascii_ else _plain_class(text, start, at, plain) if plain.shape[0] > 0 else 0
        simple = cls > 0
        res[i, 1] = 1 if ascii_ else 2 if simple else 0
        tier = 0
        if gen.shape[0] > 0 and _contains(text, start, at, gen):
            tier = RAW
        elif norm_gen.shape[0] == 0:
            tier = PARTIAL
        elif simple:
            if not _squeezed_contains(text, start, at, squeezed):
                tier = PARTIAL
            else:
                nm = normalize_ascii(text[start:at])
                tier = NORMALIZED if _contains(nm, 0, nm.shape[0], norm_gen) else PARTIAL
        res[i, 2] = tier
        want = want_nv[i]
        if want == 0 or tier == 0 or (want == 2 and tier == PARTIAL) or not simple or nvgen.shape[0] == 0:
            continue
        doc = text[start:at].copy() if cls == 1 else _retypeset(text, start, at, plain)
        st, matched, ng, nd = nv_counts(nvgen, doc, True, params)
        if st == 0:
            res[i, 3] = NV_DONE
            res[i, 4] = matched
            res[i, 5] = ng
            res[i, 6] = nd
    return text, off


def decode_pieces(q: Any, w: int, qb: Any, qe: Any, tbytes: Any, toff: Any, ok: Any) -> tuple[Any, Any]:
    """The text bytes of tokens qb[i]:qe[i] of q (tokens of width w, little-endian) through the byte table,
    concatenated, with offsets (n + 1); ok[i] = 1 when they are valid UTF-8 (else the piece's text is empty
    and the caller decodes it with the tokenizer): the span texts of a generation in one call."""
    n = qb.shape[0]
    text = np.empty(_text_size(q, qb * w, qe * w, w, toff), dtype=np.uint8)
    off = np.zeros(n + 1, dtype=np.int64)
    at = 0
    for i in range(n):
        at, good, _ = _decode(q, qb[i] * w, qe[i] * w, w, tbytes, toff, text, at)
        ok[i] = 1 if good else 0
        off[i + 1] = at
    return text, off


def pick_requests(lo: Any, hi: Any, cnts: Any, k: int, samples: Any, soff: Any, even: Any) -> tuple[Any, Any, Any]:
    """`Tracer._pick_ranks` of every job at once: job j's occurrences are the rank ranges lo/hi[j, s] of
    each shard s in order (cnts[j] in all); it keeps all of them when cnts[j] <= k, else
    samples[soff[j]:soff[j + 1]] (sorted, drawn by the caller's RNG) or, with even[j], k evenly spaced
    ones (i * cnt // k). Returns (shard, rank, job) of every kept occurrence, jobs in order."""
    nj = cnts.shape[0]
    total = 0
    for j in range(nj):
        total += cnts[j] if cnts[j] <= k else k
    shard = np.empty(total, dtype=np.int64)
    rank = np.empty(total, dtype=np.int64)
    job = np.empty(total, dtype=np.int64)
    at = 0
    for j in range(nj):
        cnt = cnts[j]
        m = cnt if cnt <= k else k
        si = 0
        base = 0
        for x in range(m):
            if cnt <= k:
                i = x
            elif even[j]:
                i = x * cnt // k
            else:
                i = samples[soff[j] + x]
            while i >= base + hi[j, si] - lo[j, si]:  # the shard holding occurrence i
                base += hi[j, si] - lo[j, si]
                si += 1
            shard[at] = si
            rank[at] = lo[j, si] + i - base
            job[at] = j
            at += 1
    return shard, rank, job


def dedup_requests(job: Any, shard: Any, doc: Any, wstart: Any, wlen: Any, anchor: Any) -> tuple[Any, Any, Any, Any]:
    """Of the requests (job, shard, document, window start and length in tokens; a job's requests are
    contiguous), the ones `Tracer` keeps: the first of each document within a job. Returns (kept flags,
    window number of each request: equal windows share it, first request of each window, what each window
    needs: 1 nv-recall, 2 nv-recall unless partial, when only anchors (anchor[job]) ask for it)."""
    n = job.shape[0]
    kept = np.zeros(n, dtype=np.bool_)
    win = np.full(n, -1, dtype=np.int64)
    first = np.empty(n, dtype=np.int64)
    want = np.empty(n, dtype=np.int64)
    nw = 0
    a = 0
    while a < n:
        b = a
        while b < n and job[b] == job[a]:
            b += 1
        for i in range(a, b):
            dup = False
            for h in range(a, i):
                if shard[h] == shard[i] and doc[h] == doc[i]:
                    dup = True
                    break
            if dup:
                continue
            kept[i] = True
            w = -1
            for t in range(nw):
                f = first[t]
                if shard[f] == shard[i] and doc[f] == doc[i] and wstart[f] == wstart[i] and wlen[f] == wlen[i]:
                    w = t
                    break
            if w < 0:
                w = nw
                first[w] = i
                want[w] = 2
                nw += 1
            win[i] = w
            if not anchor[job[i]]:
                want[w] = 1
        a = b
    return kept, win, first[:nw].copy(), want[:nw].copy()


PYTHON_KERNELS = {"scan_windows": scan_windows, "decode_pieces": decode_pieces, "pick_requests": pick_requests,
                  "dedup_requests": dedup_requests}

kernelgate.compile_all(globals(), ("_utf8_ok", "_text_size", "_decode", "_contains", "_squeezed_contains", "_plain_class", "_retypeset",
                                   "scan_windows", "decode_pieces", "pick_requests", "dedup_requests"))


_PLAIN_E9 = np.zeros(0x100, dtype=np.uint8)
_PLAIN_E9[0xE9] = 1  # the self-check's window "a b\u00e9": a plain non-ASCII character


def _self_check() -> bool:
    if not (nvkernel.available() and tierkernel.available()):
        raise RuntimeError("nv-recall or tier kernel unavailable")
    tb = np.frombuffer(b"ab\xc3\xa9 ", dtype=np.uint8)  # ids 0 "a", 1 "b", 2 "\xc3", 3 "\xa9", 4 " "
    toff = np.array([0, 1, 2, 3, 4, 5], dtype=np.int64)
    win = np.array([0, 4, 1, 2, 3, 2], dtype=np.uint8)  # "a b\xc3\xa9" then "\xc3" (cut)
    g = np.frombuffer(bytearray(b"a b"), dtype=np.uint8)
    res = np.zeros((2, 7), dtype=np.int64)
    text, off = scan_windows(win, np.array([0, 5]), np.array([5, 6]), 1, tb, toff, g.copy(), g.copy(),
                             np.frombuffer(b"ab", dtype=np.uint8), g, np.array([1, 1, 1, 1, 1, 1], dtype=np.int64),
                             np.array([1, 1]), res, _PLAIN_E9)
    if not (text[off[0]:off[1]].tobytes() == "a b\u00e9".encode() and res[0, :3].tolist() == [1, 2, RAW]
            and res[1, 0] == 0):
        return False
    ok = np.zeros(2, dtype=np.int64)
    text, off = decode_pieces(win, 1, np.array([0, 5]), np.array([5, 6]), tb, toff, ok)
    if not (text[off[0]:off[1]].tobytes() == "a b\u00e9".encode() and ok.tolist() == [1, 0] and off[2] == off[1]):
        return False
    # 3 jobs over 2 shards, k = 3: evenly spaced of 5 (occurrences 0, 1, 3), all of 2, sampled 1, 2, 4 of 5
    lo = np.array([[10, 0], [4, 7], [10, 0]], dtype=np.int64)
    hi = np.array([[12, 3], [5, 8], [12, 3]], dtype=np.int64)
    sh, rk, job = pick_requests(lo, hi, np.array([5, 2, 5]), 3, np.array([1, 2, 4]), np.array([0, 0, 0, 3]),
                                np.array([True, True, False]))
    if list(zip(sh.tolist(), rk.tolist(), job.tolist())) != [(0, 10, 0), (0, 11, 0), (1, 1, 0), (0, 4, 1), (1, 7, 1),
                                                             (0, 11, 2), (1, 0, 2), (1, 2, 2)]:
        return False
    kept, win, first, want = dedup_requests(np.array([0, 0, 0, 1, 1]), np.array([0, 0, 1, 0, 1]),
                                            np.array([5, 5, 6, 5, 6]), np.zeros(5, dtype=np.int64),
                                            np.array([3, 3, 3, 3, 4]), np.array([False, True]))
    return (kept.tolist() == [True, False, True, True, True] and win.tolist() == [0, -1, 1, 0, 2]
            and first.tolist() == [0, 2, 4] and want.tolist() == [1, 1, 2])


def available() -> bool:
    """Whether the compiled window scan loads (with the kernels it calls) and answers a tiny case right."""
    return kernelgate.checked(globals(), _self_check, "window scan")
