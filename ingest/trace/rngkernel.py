"""`random.Random(seed).sample(range(n), k)` draws compiled (numba, `nogil`): the same Mersenne Twister, the
same algorithm, the same numbers.

Why: a span with more than `max_docs` occurrences has `max_docs` of them sampled by the generation's RNG
(`tracer.rng_for`: `random.Random` seeded from the seed and the text). Seeding a Mersenne Twister and
`Random.sample`'s loop are Python under the GIL, ~25 us per generation that samples (~4% of what still held
the GIL in a trace; BENCHMARKS.md, "Threads and the GIL: rows and keys in one call"). Here the draws of
every span of a generation are one call.

Exactly CPython's `_randommodule.c` and `random.py` (3.8 and later): `seed(int)` is `init_by_array` of the
int's 32-bit words, little-endian; `getrandbits(k)`, k <= 32, is the next 32-bit output shifted right by
32 - k; `_randbelow(n)` draws `n.bit_length()` bits until the value is below n; `sample(range(n), k)`
picks from a pool when n <= setsize, else redraws indices already selected. Counts of 2^32 or more (more
bits than one output) are left to Python. tests/python/test_trace_rowkernels.py compares the draws with
`random.Random` for thousands of seeds and sizes; the self-check below does it once per process.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ingest import kernelgate

njit, _LOAD_ERROR = kernelgate.load_numba()
_checked = False

_N, _M = 624, 397
_MASK = 0xFFFFFFFF


def _init_by_array(mt: Any, key: Any) -> None:
    """CPython's init_genrand(19650218) then init_by_array(key) into mt (int64 holding 32-bit words)."""
    mt[0] = 19650218
    for i in range(1, 624):
        mt[i] = (1812433253 * (mt[i - 1] ^ (mt[i - 1] >> 30)) + i) & 0xFFFFFFFF
    i, j = 1, 0
    nk = key.shape[0]
    for _ in range(max(624, nk)):
        mt[i] = ((mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >> 30)) * 1664525)) + key[j] + j) & 0xFFFFFFFF
        i += 1
        j += 1
        if i >= 624:
            mt[0] = mt[623]
            i = 1
        if j >= nk:
            j = 0
    for _ in range(623):
        mt[i] = ((mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >> 30)) * 1566083941)) - i) & 0xFFFFFFFF
        i += 1
        if i >= 624:
            mt[0] = mt[623]
            i = 1
    mt[0] = 0x80000000


def _next32(mt: Any, pos: Any) -> int:
    """genrand_uint32: the next output; pos[0] the index into the state (624: twist first)."""
    if pos[0] >= 624:
        for kk in range(624):
            y = (mt[kk] & 0x80000000) | (mt[(kk + 1) % 624] & 0x7FFFFFFF)
            v = mt[(kk + 397) % 624] ^ (y >> 1)
            if y & 1:
                v ^= 0x9908B0DF
            mt[kk] = v
        pos[0] = 0
    y = mt[pos[0]]
    pos[0] += 1
    y ^= y >> 11
    y ^= (y << 7) & 0x9D2C5680
    y ^= (y << 15) & 0xEFC60000
    y ^= y >> 18
    return y & 0xFFFFFFFF


def _randbelow(mt: Any, pos: Any, n: int) -> int:
    k = 0
    x = n
    while x:
        k += 1
        x >>= 1
    r = _next32(mt, pos) >> (32 - k)
    while r >= n:
        r = _next32(mt, pos) >> (32 - k)
    return r


def sample_ranges(key: Any, counts: Any, k: int, setsize: int) -> Any:
    """For each n in counts, in order, from one RNG seeded with `key`: `sorted(rng.sample(range(n), k))`,
    all concatenated (k per count). Every n must be > k and < 2^32."""
    mt = np.empty(624, dtype=np.int64)
    _init_by_array(mt, key)
    pos = np.full(1, 624, dtype=np.int64)
    out = np.empty(counts.shape[0] * k, dtype=np.int64)
    for c in range(counts.shape[0]):
        n = counts[c]
        res = out[c * k:(c + 1) * k]
        if n <= setsize:
            pool = np.arange(n)
            for i in range(k):
                j = _randbelow(mt, pos, n - i)
                res[i] = pool[j]
                pool[j] = pool[n - i - 1]
        else:
            for i in range(k):
                j = _randbelow(mt, pos, n)
                seen = True
                while seen:  # `while j in selected`: k is small, a scan of the drawn ones is the set
                    seen = False
                    for q in range(i):
                        if res[q] == j:
                            seen = True
                            j = _randbelow(mt, pos, n)
                            break
                res[i] = j
        res.sort()
    return out


kernelgate.compile_all(globals(), ("_init_by_array", "_next32", "_randbelow", "sample_ranges"))


def setsize(k: int) -> int:
    """`Random.sample`'s threshold between its two methods, computed as random.py computes it."""
    size = 21
    if k > 5:
        size += 4 ** math.ceil(math.log(k * 3, 4))
    return size


def seed_key(seed: int) -> Any:
    """The 32-bit words `Random.seed(seed)` feeds to init_by_array (abs(seed), little-endian, at least one)."""
    a = abs(seed)
    words = max(1, (a.bit_length() + 31) // 32)
    return np.array([(a >> (32 * i)) & _MASK for i in range(words)], dtype=np.int64)


def sorted_samples(seed: int, counts: Sequence[int], k: int) -> list[list[int]] | None:
    """[sorted(rng.sample(range(n), k)) for n in counts] with rng = random.Random(seed), drawn in order, in
    one compiled call; None when the kernel is off or a count is not in (k, 2^32)."""
    if not counts or not available() or min(counts) <= k or max(counts) >= 1 << 32 or k < 1:
        return None
    out = sample_ranges(seed_key(seed), np.array(counts, dtype=np.int64), k, setsize(k)).tolist()
    return [out[i:i + k] for i in range(0, len(out), k)]


def _self_check() -> bool:
    import random

    for seed, counts, k in ((0, [11, 50, 10**6], 10), (2**40 + 7, [86, 85, 3, 1000], 2), (123456789, [7], 6)):
        rng = random.Random(seed)
        want = [sorted(rng.sample(range(n), k)) for n in counts]
        got = sample_ranges(seed_key(seed), np.array(counts, dtype=np.int64), k, setsize(k)).tolist()
        if got != [x for w in want for x in w]:
            return False
    return True


def available() -> bool:
    """Whether the compiled draws can be used (numba loaded, compiled, checked once per process)."""
    return kernelgate.checked(globals(), _self_check, "sampling RNG")
