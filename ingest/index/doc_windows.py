"""Document windows of many suffix-array ranks in one compiled call (numba, `nogil`).

Why: `IndexEngine.docs_by_ranks` builds one `DocRecord` per rank in Python (pointer, bisect over the document
offsets, checks, a token list): ~20% of a trace, all of it under the GIL. The tracer needs only the window's
place and its raw token bytes, so this kernel does the same arithmetic and the same checks for every request
of a generation at once and copies the windows' bytes into one buffer; the tracer decodes and scores them in
its own compiled kernel (`ingest.trace.windowkernel`) and builds rows only for what it keeps.

Arithmetic and checks are `IndexEngine.docs_by_ranks` + `IndexEngine._window`, step by step (tests compare
every field with `docs_by_ranks` and with the engine's `get_docs_by_ranks_2`). A request that fails a check
stops the call with a status code; the caller then runs `docs_by_ranks`, which raises the same error with
its message, so no error text lives here.

`toks`, `tables`, `offs`: per shard, uint8 views of `tokenized` and `table` and a uint64 view of `offset`
(tuples, one array per shard); `pss`, `tok_cnts`, `n_docs`: per shard. Without numba, or when the compiled
kernel fails its self-check (`available()`, `ingest.kernelgate`), this module is not used (the tracer keeps
its Python path).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ingest import kernelgate

njit, _LOAD_ERROR = kernelgate.load_numba()
_checked = False

# status codes (0: every request fine)
RANK_OUT_OF_RANGE, PTR_OUTSIDE, AT_SEPARATOR, BAD_OFFSETS, NEEDLE_MISMATCH, BAD_SHARD = 1, 2, 3, 4, 5, 6


def _read(buf: Any, at: int, n: int) -> int:
    """A little-endian unsigned integer of n bytes at byte `at`."""
    v = 0
    for i in range(n - 1, -1, -1):
        v = (v << 8) | int(buf[at + i])
    return v


def windows(toks: Any, tables: Any, offs: Any, pss: Any, tok_cnts: Any, n_docs: Any, w: int, sep: int,
            shards: Any, ranks: Any, q: Any, qb: Any, qe: Any, ctx: int, check: bool, out: Any) -> Any:
    """For request i (shard shards[i], rank ranks[i], needle tokens q[qb[i]*w : qe[i]*w], context `ctx` tokens):
    out[i] = (local document number, document start byte, document end byte, window start byte, window end
    byte, pointer). With `check`, the window must hold the needle at the pointer (the tracer's check).
    Returns (status, index of the failing request or -1, window bytes of every request concatenated,
    offsets of each request's bytes in it (n + 1))."""
    n = shards.shape[0]
    total = 0
    for i in range(n):
        s = shards[i]
        if s < 0 or s >= pss.shape[0]:
            return BAD_SHARD, i, np.empty(0, dtype=np.uint8), np.zeros(n + 1, dtype=np.int64)
        rank = ranks[i]
        tk = toks[s]
        tc = tok_cnts[s]
        if rank < 0 or rank >= tc:
            return RANK_OUT_OF_RANGE, i, np.empty(0, dtype=np.uint8), np.zeros(n + 1, dtype=np.int64)
        ps = pss[s]
        ptr = _read(tables[s], rank * ps, ps)
        if ptr >= tc * w or ptr % w:
            return PTR_OUTSIDE, i, np.empty(0, dtype=np.uint8), np.zeros(n + 1, dtype=np.int64)
        if _read(tk, ptr, w) == sep:
            return AT_SEPARATOR, i, np.empty(0, dtype=np.uint8), np.zeros(n + 1, dtype=np.int64)
        needle = min(qe[i] - qb[i], tc)
        c = min(ctx, tc)
        od = offs[s]
        nd = n_docs[s]
        lo = 0
        hi = nd
        while lo < hi:  # bisect_right(od, ptr)
            mid = (lo + hi) >> 1
            if ptr < np.int64(od[mid]):
                hi = mid
            else:
                lo = mid + 1
        local = lo - 1
        sep_at = np.int64(od[local]) if local >= 0 else -1
        doc_end = np.int64(od[local + 1]) if 0 <= local and local + 1 < nd else tc * w
        if not (0 <= sep_at < ptr < doc_end <= tc * w) or sep_at % w or _read(tk, sep_at, w) != sep:
            return BAD_OFFSETS, i, np.empty(0, dtype=np.uint8), np.zeros(n + 1, dtype=np.int64)
        doc_start = sep_at + w
        disp_start = max(doc_start, 0 if ptr < w * c else ptr - w * c)
        disp_end = min(doc_end, ptr + w * (needle + c))
        if check:
            nb = (qe[i] - qb[i]) * w
            if ptr + nb > disp_end:
                return NEEDLE_MISMATCH, i, np.empty(0, dtype=np.uint8), np.zeros(n + 1, dtype=np.int64)
            a = qb[i] * w
            for j in range(nb):
                if tk[ptr + j] != q[a + j]:
                    return NEEDLE_MISMATCH, i, np.empty(0, dtype=np.uint8), np.zeros(n + 1, dtype=np.int64)
        out[i, 0] = local
        out[i, 1] = doc_start
        out[i, 2] = doc_end
        out[i, 3] = disp_start
        out[i, 4] = disp_end
        out[i, 5] = ptr
        total += disp_end - disp_start
    buf = np.empty(total, dtype=np.uint8)
    boff = np.zeros(n + 1, dtype=np.int64)
    at = 0
    for i in range(n):
        tk = toks[shards[i]]
        for j in range(out[i, 3], out[i, 4]):
            buf[at] = tk[j]
            at += 1
        boff[i + 1] = at
    return 0, -1, buf, boff


PYTHON_KERNELS = {"windows": windows}

kernelgate.compile_all(globals(), ("_read", "windows"))


def _self_check() -> bool:
    """One shard of two documents (w = 1, separator 0xFF): tokens FF 5 6 7 FF 8 9, separators at bytes 0
    and 4; rank 0 points at byte 2 (token 6), rank 1 at byte 5 (token 8). The window of rank 0 with the
    needle [6] and 1 token of context is bytes 1-4 of document 0; rank 1 with the same needle fails the
    needle check."""
    toks = (np.frombuffer(bytes([255, 5, 6, 7, 255, 8, 9]), dtype=np.uint8),)
    tables = (np.frombuffer(bytes([2, 5, 0, 0, 0, 0, 0]), dtype=np.uint8),)
    offs = (np.array([0, 4], dtype=np.uint64),)
    one = np.array([1], dtype=np.int64)
    q = np.frombuffer(bytes([6]), dtype=np.uint8)
    out = np.zeros((1, 6), dtype=np.int64)
    status, _, buf, boff = windows(toks, tables, offs, one, np.array([7]), np.array([2]), 1, 255,
                                   np.array([0]), np.array([0]), q, np.array([0]), np.array([1]), 1, True, out)
    if status != 0 or out[0].tolist() != [0, 1, 4, 1, 4, 2] or buf.tobytes() != bytes([5, 6, 7]) or boff[1] != 3:
        return False
    status, at, _, _ = windows(toks, tables, offs, one, np.array([7]), np.array([2]), 1, 255,
                               np.array([0]), np.array([1]), q, np.array([0]), np.array([1]), 1, True, out)
    return status == NEEDLE_MISMATCH and at == 0


def available() -> bool:
    """Whether the compiled windows load and answer a tiny index right; checked once per process."""
    return kernelgate.checked(globals(), _self_check, "document windows")
