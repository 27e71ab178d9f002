"""Review of the compiled trace kernels (helper-39): edge cases of `keykernel` (BLAKE2b keys), `rngkernel`
(CPython's Mersenne Twister and `Random.sample`) and `spankernel` (maximal spans, `sum()` scores) against
the Python they replace: int64 limits, BLAKE2b block boundaries, make_key's `type:value` encoding, seeds of
every size and sign, counts at powers of two and at `sample`'s pool/set switch."""

from __future__ import annotations

import hashlib
import random
import struct
from operator import itemgetter

import numpy as np
import pytest
from test_trace_fast import bpe, corpus, engine  # noqa: F401 - fixtures (index of three kinds)

from ingest.lake import make_key
from ingest.trace import keykernel, rngkernel, spankernel

I64_MIN, I64_MAX = -(2**63), 2**63 - 1


def _keys(prefixes, which, a, b):
    heads = [keykernel.prefix_bytes(*p) for p in prefixes]
    return keykernel.pair_keys(heads, which, a, b), [make_key(*prefixes[w], x, y) for w, x, y in zip(which, a, b)]


def test_pair_keys_at_the_int64_limits() -> None:
    """Every int64 is written as `str()` writes it; int64's minimum (whose negation overflows) included."""
    assert keykernel.available()
    vals = [0, -1, 1, 9, 10, -9, -10, 10**18, -(10**18), I64_MAX, I64_MAX - 1, I64_MIN + 1, I64_MIN]
    a = [x for x in vals for _ in vals]
    b = [y for _ in vals for y in vals]
    got, want = _keys([("s",)], [0] * len(a), a, b)
    assert got == want
    # numpy arrays: keyed as their Python ints (pair_keys' contract; make_key of a numpy scalar writes int64:)
    heads = [keykernel.prefix_bytes("s")]
    assert keykernel.pair_keys(heads, np.zeros(len(a), dtype=np.int64), np.array(a, dtype=np.int64),
                               np.array(b, dtype=np.int64)) == want


def test_pair_keys_at_blake2b_block_boundaries() -> None:
    """Messages of every length around one, two and three 128-byte blocks (a last block that is full must be
    compressed as the final one), an empty head, and heads with non-ASCII characters (bytes, not chars)."""
    assert keykernel.available()
    heads, msgs = [], []
    for tail in ("int:0\x1fint:0", "int:-5\x1fint:123456789"):
        for total in list(range(1, 6)) + list(range(120, 136)) + list(range(250, 262)) + list(range(378, 390)):
            pad = total - len(tail.encode())
            if pad < 0:
                continue
            for head in (b"x" * pad, ("\u00e9" * (pad // 2) + "y" * (pad % 2)).encode()):
                if len(head) != pad:
                    continue
                heads.append(head)
                msgs.append(head + tail.encode())
    which = list(range(len(heads)))
    a = [0 if m.endswith(b"int:0\x1fint:0") else -5 for m in msgs]
    b = [0 if x == 0 else 123456789 for x in a]
    got = keykernel.pair_keys(heads, which, a, b)
    assert {len(m) for m in msgs} >= {128, 256, 384, 127, 129, 255, 257}
    assert got == [hashlib.blake2b(m, digest_size=16).hexdigest() for m in msgs]


def test_prefix_bytes_encode_as_make_key() -> None:
    """`type:value` as make_key writes it: bool is not int, str "1" is not int 1, None is a NUL, "" is `str:`;
    non-ASCII and separator characters inside a part."""
    prefixes = [("",), (None,), (True,), (1,), ("1",), (False, 0, "0", None), (1.5,), ("caf\u00e9 \U0001f389",),
                ("a\x1fb",), ("\x00",), (-7, "x" * 130), (2**70,)]
    which = [i for i in range(len(prefixes)) for _ in range(3)]
    a = [0, -1, 10**17] * len(prefixes)
    b = [5, 0, I64_MAX] * len(prefixes)
    got, want = _keys(prefixes, which, a, b)
    assert got == want
    assert len(set(got)) == len(got)


def test_prefix_bytes_of_no_prefix() -> None:
    """`make_key(a, b)` (no prefix) has no separator before `int:`: prefix_bytes() must be empty, not a lone
    separator (pair_keys' contract: heads[w] is prefix_bytes(*prefix_w), any prefix)."""
    assert keykernel.prefix_bytes() == b""
    got, want = _keys([()], [0, 0], [0, -3], [5, 2**40])
    assert got == want


def test_pair_keys_fallback_keys_bools_as_ints_like_the_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    """pair_keys' contract is make_key(*prefix, int(a), int(b)): the kernel writes a bool as `int:1`; the
    hashlib fallback (numba missing, NUMBA_DISABLE_JIT=1, failed self-check) must write the same, not
    `int:True` (the two paths of one function giving different keys for the same input)."""
    heads = [keykernel.prefix_bytes("s")]
    a, b = [True, False], [True, True]  # all bools: np.asarray keeps them bools
    want = [make_key("s", int(x), int(y)) for x, y in zip(a, b)]
    assert keykernel.pair_keys(heads, [0, 0], a, b) == want
    assert keykernel.pair_keys(heads, [0, 0], np.array(a), np.array(b)) == want
    monkeypatch.setattr(keykernel, "available", lambda: False)
    assert keykernel.pair_keys(heads, [0, 0], a, b) == want
    assert keykernel.pair_keys(heads, [0, 0], np.array(a), np.array(b)) == want


def _mt_cases():
    rng = random.Random(39)
    seeds = [0, 1, -1, -12345, 2**32 - 1, 2**32, 2**32 + 1, -(2**32), 2**63, 2**64 - 1, 2**64, 2**96 + 5,
             -(2**100) - 3] + [rng.getrandbits(64) for _ in range(20)]
    counts = sorted({c for p in range(1, 32) for c in (2**p - 1, 2**p, 2**p + 1)} | {2**32 - 1})
    return seeds, counts


def test_sorted_samples_at_powers_of_two_and_every_seed_kind() -> None:
    """Counts at 2^p - 1, 2^p, 2^p + 1 (where `_randbelow`'s bit count changes), seeds of one, two, three and
    more 32-bit words, negative ones (abs), 0; several k on both sides of `sample`'s set/pool switch."""
    assert rngkernel.available()
    seeds, counts = _mt_cases()
    for seed in seeds:
        for k in (1, 2, 5, 6, 7, 10, 30):
            cs = [c for c in counts if c > k]
            py = random.Random(seed)
            assert rngkernel.sorted_samples(seed, cs, k) == [sorted(py.sample(range(n), k)) for n in cs], (seed, k)


def test_sorted_samples_at_sample_pool_set_switch() -> None:
    """n = setsize (pool), setsize + 1 (set) and their neighbours for k from 1 to 40, drawn one after the
    other from one RNG (the state after each sample must be CPython's too), and n = k + 1."""
    seeds, _ = _mt_cases()
    for seed in seeds[:8]:
        for k in range(1, 41):
            s = rngkernel.setsize(k)
            cs = [n for n in (k + 1, s - 1, s, s + 1, 4 * s, s, s + 1) if n > k]
            py = random.Random(seed)
            assert rngkernel.sorted_samples(seed, cs, k) == [sorted(py.sample(range(n), k)) for n in cs], (seed, k)


def test_setsize_is_random_py_threshold() -> None:
    """The threshold `Random.sample` computes (k*3 at powers of 4 is where the float log could round)."""
    import math

    for k in range(5000):
        want = 21 + (4 ** math.ceil(math.log(k * 3, 4)) if k > 5 else 0)
        assert rngkernel.setsize(k) == want


def test_sorted_samples_declines_what_it_cannot_draw() -> None:
    assert rngkernel.sorted_samples(5, [], 3) is None
    assert rngkernel.sorted_samples(5, [10], 0) is None
    assert rngkernel.sorted_samples(5, [3], 3) is None  # k = n: not drawn here (the tracer draws only n > k)
    assert rngkernel.sorted_samples(5, [10, 2**32], 3) is None


def _bits(x: float) -> bytes:
    return struct.pack("<d", x)


@pytest.mark.skipif(not spankernel.SAME_AS_SUM, reason="sum() is compensated from Python 3.12: not used there")
def test_span_scores_signed_zeros_and_single_tokens() -> None:
    """sum() starts from the int 0: 0 + (-0.0) is +0.0, and so is the kernel's 0.0 + (-0.0); one-token spans,
    ids past the table (floor), huge and tiny magnitudes, bit for bit."""
    lp = np.array([-0.0, 0.0, -1e-300, -1e300, -0.1, -0.2, -0.3, -5e-324, -1e16, 1.0])
    lp_list, floor = lp.tolist(), -0.0
    ids = np.array([0, 0, 1, 2, 3, 3, 4, 5, 6, 7, 8, 9, 8, 10, 11, 0], dtype=np.int64)
    starts, ends = [], []
    for s in range(len(ids)):
        for e in range(s + 1, len(ids) + 1):
            starts.append(s)
            ends.append(e)
    got = spankernel.span_scores(ids, lp, floor, np.array(starts, dtype=np.int64),
                                 np.array(ends, dtype=np.int64)).tolist()
    for s, e, g in zip(starts, ends, got):
        part = ids[s:e].tolist()
        if len(part) > 1 and max(part) < len(lp_list):
            want = float(sum(itemgetter(*part)(lp_list)))
        else:
            want = float(sum(lp_list[t] if t < len(lp_list) else floor for t in part))
        assert _bits(g) == _bits(want), (s, e, g, want)


def test_maximal_spans_edge_lengths() -> None:
    from ingest.trace.matching import maximal_spans

    for n in ([], [0], [1], [0, 0, 0], [3, 2, 1], [1, 1, 1], [2, 0, 2, 1], [5, 4, 3, 2, 1]):
        for k in (0, 1, 2, 3, 6):
            bs, es = spankernel.maximal_spans(np.array(n, dtype=np.int64), k)
            assert list(zip(bs.tolist(), es.tolist())) == [(b, e) for b, e in maximal_spans(n) if e - b >= k]


@pytest.mark.parametrize("mode", ["mixed", "text"])
@pytest.mark.parametrize("max_docs", [1, 3, 10])
def test_trace_rows_equal_with_the_new_kernels_off(engine, max_docs, mode, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    """End to end, on the compiled engine: the rows of a trace with the compiled keys, draws and span steps
    equal those of the same trace with those three kernels off (make_key/hashlib, random.Random.sample,
    matching.maximal_spans + Tracer._filter + sum()), with sampling (counts above max_docs) happening."""
    from test_trace_fast import _gens

    from ingest.trace.params import TraceParams
    from ingest.trace.tracer import Tracer

    eng, tok = engine
    params = TraceParams(mode=mode, seed=5, dup_min_len=10, dup_prefix_len=8, window_factor=3,
                         max_docs=max_docs, min_span_len=2)
    logp = eng.manifest.load_logprobs(eng.index_dirs[0])
    texts = _gens(tok)

    def run():
        tr = Tracer(eng, tok, logp, -30.0, params, "t")
        return [tr.trace(f"g{i}", text) for i, text in enumerate(texts)]

    fast = run()
    for mod in (keykernel, rngkernel, spankernel):
        monkeypatch.setattr(mod, "available", lambda: False)
    slow = run()
    sampled = 0
    for a, b in zip(fast, slow):
        assert a.generation == b.generation
        assert a.spans == b.spans
        assert a.documents == b.documents
        assert a.counts == b.counts
        sampled += sum(1 for s in a.spans if s["kept"] and s["count"] > max_docs)
    assert sampled > 0
