"""Row keys of a whole trace in one compiled call: `make_key(*prefix, a, b)` for many int pairs (numba, `nogil`).

Why: every span row and every span-document row carries a key, `make_key(trace_id, generation_id, start, end)`
or `make_key(span_id, shard, doc_ix)` (ingest/lake/keys.py): the BLAKE2b-128 hex digest of the parts encoded
as `type:value` joined by U+001F. A trace makes ~37 of them (7,400 per 200 traces on the benchmark inputs),
each a string format, an encode, a hash and a hexdigest under the GIL: ~8% of the Python that still holds
the GIL in a trace (BENCHMARKS.md, "Threads and the GIL: rows and keys in one call"). Here the prefixes are
encoded once by the caller (`prefix_bytes`), and one call writes, for every pair, the decimal ints, BLAKE2b
(RFC 7693, digest size 16, no key) and the hex digits; Python only cuts the one ASCII string that comes back.

The hash is checked against `hashlib.blake2b` once per process (kernelgate) and by
tests/python/test_trace_rowkernels.py (random prefixes of 0-400 bytes, so one, two and more blocks, and ints of
every length); without numba, or when the check fails, `pair_keys` hashes with hashlib (same keys).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from ingest import kernelgate

njit, _LOAD_ERROR = kernelgate.load_numba()
_checked = False

_IV = np.array([0x6A09E667F3BCC908, 0xBB67AE8584CAA73B, 0x3C6EF372FE94F82B, 0xA54FF53A5F1D36F1,
                0x510E527FADE682D1, 0x9B05688C2B3E6C1F, 0x1F83D9ABFB41BD6B, 0x5BE0CD19137E2179], dtype=np.uint64)
_SIGMA = np.array([
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15],
    [14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3],
    [11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4],
    [7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8],
    [9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13],
    [2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9],
    [12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11],
    [13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10],
    [6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5],
    [10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0]], dtype=np.int64)
_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8).copy()
_MID = np.frombuffer(b"\x1fint:", dtype=np.uint8).copy()  # between the two ints
_INT = np.frombuffer(b"int:", dtype=np.uint8).copy()


def _rotr(x: Any, n: Any) -> Any:
    return (x >> n) | (x << (np.uint64(64) - n))


def _compress(h: Any, block: Any, t: int, last: bool, v: Any, m: Any, iv: Any, sigma: Any) -> None:
    """BLAKE2b's F (RFC 7693 3.2) on one 128-byte block; `t` the bytes hashed so far (< 2^63 here)."""
    for i in range(16):
        w = np.uint64(0)
        for k in range(8):
            w |= np.uint64(block[8 * i + k]) << np.uint64(8 * k)
        m[i] = w
    for i in range(8):
        v[i] = h[i]
        v[i + 8] = iv[i]
    v[12] ^= np.uint64(t)
    if last:
        v[14] = ~v[14]
    r32, r24, r16, r63 = np.uint64(32), np.uint64(24), np.uint64(16), np.uint64(63)
    for r in range(12):
        s = sigma[r % 10]
        for j in range(8):
            if j < 4:  # the columns (0,4,8,12) .. (3,7,11,15)
                a, b, c, d = j, j + 4, j + 8, j + 12
            else:  # the diagonals (0,5,10,15) (1,6,11,12) (2,7,8,13) (3,4,9,14)
                q = j - 4
                a, b, c, d = q, 4 + (q + 1) % 4, 8 + (q + 2) % 4, 12 + (q + 3) % 4
            x, y = m[s[2 * j]], m[s[2 * j + 1]]
            v[a] = v[a] + v[b] + x
            v[d] = _rotr(v[d] ^ v[a], r32)
            v[c] = v[c] + v[d]
            v[b] = _rotr(v[b] ^ v[c], r24)
            v[a] = v[a] + v[b] + y
            v[d] = _rotr(v[d] ^ v[a], r16)
            v[c] = v[c] + v[d]
            v[b] = _rotr(v[b] ^ v[c], r63)
    for i in range(8):
        h[i] ^= v[i] ^ v[i + 8]


def _put_int(buf: Any, n: int, x: int) -> int:
    """`str(x)` of an int64 as ASCII into buf[n:]; the new length."""
    if x < 0:
        buf[n] = 45
        n += 1
        # -x overflows for int64's minimum: the magnitude as uint64, -(x + 1) + 1 (all uint64 arithmetic:
        # numba turns uint64 mixed with int64 into float64)
        u = np.uint64(-(x + 1)) + np.uint64(1)
        ten = np.uint64(10)
        k = 1
        v = u
        while v >= ten:
            v //= ten
            k += 1
        for i in range(k - 1, -1, -1):
            buf[n + i] = np.uint64(48) + u % ten
            u //= ten
        return n + k
    k = 1
    y = x
    while y >= 10:
        y //= 10
        k += 1
    for i in range(k - 1, -1, -1):
        buf[n + i] = 48 + x % 10
        x //= 10
    return n + k


def blake2b_pair_keys(heads: Any, hlen: Any, which: Any, a: Any, b: Any) -> Any:
    """For every i: the hex BLAKE2b-128 of head[which[i]] + b"int:" + str(a[i]) + b"\\x1fint:" + str(b[i]),
    where the heads lie one after the other in `heads` with lengths `hlen`; 32 hex digits each, as UCS-4
    code points in one uint32 array (a view as numpy's "<U32" turns it into Python strs in one C call).
    The constants are module globals (numba freezes them): fewer arguments, less dispatch under the GIL."""
    iv, sigma, hexd, mid, intp = _IV, _SIGMA, _HEX, _MID, _INT
    hoff = np.zeros(hlen.shape[0] + 1, dtype=np.int64)
    for j in range(hlen.shape[0]):
        hoff[j + 1] = hoff[j] + hlen[j]
    n = a.shape[0]
    out = np.empty(32 * n, dtype=np.uint32)
    longest = 0
    for j in range(hlen.shape[0]):
        longest = max(longest, hlen[j])
    msg = np.zeros(longest + 64 + 128, dtype=np.uint8)
    block = np.zeros(128, dtype=np.uint8)
    h = np.empty(8, dtype=np.uint64)
    v = np.empty(16, dtype=np.uint64)
    m = np.empty(16, dtype=np.uint64)
    for i in range(n):
        w = which[i]
        ln = 0
        for p in range(hoff[w], hoff[w + 1]):
            msg[ln] = heads[p]
            ln += 1
        for p in range(4):
            msg[ln + p] = intp[p]
        ln = _put_int(msg, ln + 4, a[i])
        for p in range(5):
            msg[ln + p] = mid[p]
        ln = _put_int(msg, ln + 5, b[i])
        for k in range(8):
            h[k] = iv[k]
        h[0] ^= np.uint64(0x01010010)  # digest length 16, no key, fanout 1, depth 1
        pos = 0
        while ln - pos > 128:
            for k in range(128):
                block[k] = msg[pos + k]
            pos += 128
            _compress(h, block, pos, False, v, m, iv, sigma)
        for k in range(128):
            block[k] = msg[pos + k] if pos + k < ln else 0
        _compress(h, block, ln, True, v, m, iv, sigma)
        for k in range(16):
            byte = (h[k // 8] >> np.uint64(8 * (k % 8))) & np.uint64(255)
            out[32 * i + 2 * k] = hexd[byte >> np.uint64(4)]
            out[32 * i + 2 * k + 1] = hexd[byte & np.uint64(15)]
    return out


kernelgate.compile_all(globals(), ("_rotr", "_compress", "_put_int", "blake2b_pair_keys"))


_JIT_OFF: list[bool] = []


def _jit_off() -> bool:
    """NUMBA_DISABLE_JIT=1: the kernel would run as plain Python on numpy scalars (slow, and numpy warns on
    every wrapping add); hashlib gives the same keys. Read once per process."""
    if not _JIT_OFF:
        try:
            from numba import config
            _JIT_OFF.append(bool(config.DISABLE_JIT))
        except Exception:  # noqa: BLE001 - no numba: available() is False anyway
            _JIT_OFF.append(False)
    return _JIT_OFF[0]


def prefix_bytes(*prefix: object) -> bytes:
    """The UTF-8 encoding `make_key` gives `prefix` and the separator after it (ingest/lake/keys.py: None as
    a NUL, else `type:value`), for `pair_keys`; no prefix: empty (`make_key(a, b)` starts with `int:`)."""
    if not prefix:
        return b""
    return ("\x1f".join("\x00" if p is None else f"{type(p).__name__}:{p}" for p in prefix) + "\x1f").encode()


def _hashlib_keys(heads: Sequence[bytes], which: Sequence[int], a: Sequence[int], b: Sequence[int]) -> list[str]:
    return [hashlib.blake2b(heads[w] + f"int:{x}\x1fint:{y}".encode(), digest_size=16).hexdigest()
            for w, x, y in zip(which, a, b)]


def pair_keys(heads: Sequence[bytes], which: Sequence[int], a: Sequence[int], b: Sequence[int]) -> list[str]:
    """`make_key(*prefix_w, int(a[i]), int(b[i]))` for every i, where `heads[w]` is `prefix_bytes(*prefix_w)`
    and w = which[i]: the ints are always encoded as Python ints (`int:`), also when a and b are numpy
    arrays (make_key of a numpy scalar would write its type, `int64:`). One compiled call when available."""
    if not len(a):
        return []
    if _jit_off() or not available():
        # the ints converted as the kernel's arguments are (a bool is int:1, as int(a) writes it, not int:True)
        return _hashlib_keys(heads, np.asarray(which).tolist(), np.asarray(a, dtype=np.int64).tolist(),
                             np.asarray(b, dtype=np.int64).tolist())
    hlen = np.fromiter(map(len, heads), dtype=np.int64, count=len(heads))
    buf = np.frombuffer(b"".join(heads) or b"\0", dtype=np.uint8)
    out = blake2b_pair_keys(buf, hlen, np.asarray(which, dtype=np.int64), np.asarray(a, dtype=np.int64),
                            np.asarray(b, dtype=np.int64))
    return out.view("<U32").tolist()


def _self_check() -> bool:
    if _jit_off():
        return True  # nothing compiled to check; pair_keys uses hashlib
    heads = [b"", b"str:x\x1f", "str:\u00e9\x1fint:3\x1f".encode(), b"str:" + b"y" * 300 + b"\x1f"]
    which, a, b = [0, 1, 2, 3, 3, 1], [0, 7, 123456789012, 5, 0, 10], [0, 99, 1, 2**40, 9, 1000]
    out = blake2b_pair_keys(np.frombuffer(b"".join(heads), dtype=np.uint8),
                            np.array([len(x) for x in heads], dtype=np.int64), np.array(which, dtype=np.int64),
                            np.array(a, dtype=np.int64), np.array(b, dtype=np.int64)).view("<U32").tolist()
    return out == _hashlib_keys(heads, which, a, b)


def available() -> bool:
    """Whether the compiled keys can be used (numba loaded, compiled, checked once per process)."""
    return kernelgate.checked(globals(), _self_check, "row keys")
