"""The compiled row keys (`ingest.trace.keykernel`) and span steps (`ingest.trace.spankernel`) against the
Python they replace: `make_key`, `matching.maximal_spans` with token mode's length filter, and the
tracer's unigram score (`sum()` of the floats)."""

from __future__ import annotations

import random
from operator import itemgetter

import numpy as np
import pytest

from ingest.lake import make_key
from ingest.trace import keykernel, spankernel
from ingest.trace.matching import maximal_spans


def _cases(seed: int, n: int):
    rng = random.Random(seed)
    parts = ["", "x", "\x1f", "\x00", "caf\u00e9 \U0001f389", None, 0, -3, 12, "str:y"]
    prefixes, which, a, b = [], [], [], []
    for _ in range(40):
        p = [rng.choice(parts) for _ in range(rng.randint(1, 3))]
        if rng.random() < 0.3:  # long prefixes: messages of two and more 128-byte blocks
            p.append("z" * rng.randint(50, 400))
        prefixes.append(p)
    for _ in range(n):
        which.append(rng.randrange(len(prefixes)))
        a.append(rng.choice([0, 9, 10, -1, rng.randrange(10 ** rng.randint(1, 18))]))
        b.append(rng.choice([0, 99, 100, rng.randrange(10 ** rng.randint(1, 18))]))
    return prefixes, which, a, b


def test_pair_keys_equal_make_key() -> None:
    prefixes, which, a, b = _cases(1, 3000)
    heads = [keykernel.prefix_bytes(*p) for p in prefixes]
    want = [make_key(*prefixes[w], x, y) for w, x, y in zip(which, a, b)]
    assert keykernel.available()
    assert keykernel.pair_keys(heads, which, a, b) == want
    assert keykernel.pair_keys(heads, np.array(which), np.array(a), np.array(b)) == want
    assert keykernel.pair_keys(heads, [], [], []) == []


def test_pair_keys_without_the_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    prefixes, which, a, b = _cases(2, 300)
    heads = [keykernel.prefix_bytes(*p) for p in prefixes]
    monkeypatch.setattr(keykernel, "available", lambda: False)
    got = keykernel.pair_keys(heads, np.array(which), np.array(a), np.array(b))
    assert got == [make_key(*prefixes[w], x, y) for w, x, y in zip(which, a, b)]


def test_maximal_spans_equal_the_python_steps() -> None:
    rng = np.random.default_rng(3)
    assert spankernel.available()
    for _ in range(500):
        L = int(rng.integers(0, 200))
        n = rng.integers(0, 12, L).astype(np.int64)
        if rng.random() < 0.5:  # real match lengths: end(b) = b + n(b) never decreases
            for i in range(1, L):
                n[i] = max(n[i], n[i - 1] - 1)
        k = int(rng.integers(1, 6))
        bs, es = spankernel.maximal_spans(n, k)
        want = [(b, e) for b, e in maximal_spans(n.tolist()) if e - b >= k]
        assert list(zip(bs.tolist(), es.tolist())) == want


@pytest.mark.skipif(not spankernel.SAME_AS_SUM, reason="sum() is compensated from Python 3.12: not used there")
def test_span_scores_equal_sum() -> None:
    rng = np.random.default_rng(4)
    lp = -rng.exponential(8.0, 500)
    lp_list, floor = lp.tolist(), -30.0
    ids = rng.integers(0, 520, 3000).astype(np.int64)  # ids past the table take the floor
    starts = rng.integers(0, 2990, 400).astype(np.int64)
    ends = starts + rng.integers(1, 10, 400)
    got = spankernel.span_scores(ids, lp, floor, starts, ends).tolist()
    for s, e, g in zip(starts.tolist(), ends.tolist(), got):
        part = ids[s:e].tolist()
        if len(part) > 1 and max(part) < len(lp_list):
            want = float(sum(itemgetter(*part)(lp_list)))
        else:
            want = float(sum(lp_list[t] if t < len(lp_list) else floor for t in part))
        assert g == want  # the same float, bit for bit


def test_compiled_samples_equal_random_sample() -> None:
    """`rngkernel` draws what `random.Random(seed).sample(range(n), k)` draws, call after call, for both of
    sample's methods (pool and set), seeds of one and two 32-bit words, and counts up to 2^32 - 1."""
    from ingest.trace import rngkernel

    rng = random.Random(7)
    assert rngkernel.available()
    for _ in range(2000):
        seed = rng.choice([0, 1, rng.getrandbits(32), rng.getrandbits(64), rng.getrandbits(20)])
        k = rng.choice([1, 2, 5, 6, 10, 10, 25])
        counts = [max(k + 1, rng.choice([k + 1, 21, 22, 85, 86, 10**6, 2**32 - 1, rng.randrange(2, 10**9)]))
                  for _ in range(rng.randint(1, 8))]
        py = random.Random(seed)
        assert rngkernel.sorted_samples(seed, counts, k) == [sorted(py.sample(range(n), k)) for n in counts]
    assert rngkernel.sorted_samples(3, [2**32], 10) is None  # more bits than one output: Python's


def test_lazy_rng_sorted_samples_equal_its_draws() -> None:
    from ingest.trace.tracer import _LazyRng, rng_for

    for seed, text in ((0, ""), (1, "abc"), (42, "caf\u00e9 \U0001f600")):
        lazy, eager = _LazyRng(seed, text), rng_for(seed, text)
        counts = [11, 500, 10**7, 86]
        assert lazy.sorted_samples(counts, 10) == [sorted(eager.sample(range(n), 10)) for n in counts]
        with pytest.raises(RuntimeError):  # the compiled draws consumed it
            lazy.sample(range(100), 10)


def test_ascii_normalized_bytes_equal_the_str_steps() -> None:
    """An ASCII generation's normalized bytes come from the compiled normalization as they are, and its
    whitespace-free form from a byte table: the same bytes as encoding `normalize_document(text)` and
    `"".join(normalize_document(text).split())`."""
    from ingest.trace.normalize import normalize_document
    from ingest.trace.tracer import _Gen

    rng = random.Random(11)
    alphabet = "ab .,\t\n\r\x0b\x0c\x1c\x1d\x1e\x1f  \r\n"
    for _ in range(2000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        g = _Gen(object(), text, [])
        norm = normalize_document(text)
        assert g.norm_bytes.tobytes() == norm.encode()
        assert g.squeezed_bytes.tobytes() == "".join(norm.split()).encode()
        assert g.norm_doc == norm


@pytest.mark.skipif(not spankernel.SAME_AS_SUM, reason="sum() is compensated from Python 3.12: not used there")
def test_spans_with_scores_is_both_steps() -> None:
    rng = np.random.default_rng(5)
    lp = -rng.exponential(8.0, 300)
    for _ in range(200):
        L = int(rng.integers(1, 150))
        n = rng.integers(0, 9, L).astype(np.int64)
        n = np.minimum(n, L - np.arange(L))
        ids = rng.integers(0, 320, L).astype(np.int64)
        bs, es, sc = spankernel.spans_with_scores(n, 2, ids, lp, -30.0)
        b2, e2 = spankernel.maximal_spans(n, 2)
        assert bs.tolist() == b2.tolist() and es.tolist() == e2.tolist()
        assert sc.tolist() == spankernel.span_scores(ids, lp, -30.0, b2, e2).tolist()


def test_pair_keys_at_int64_limits_and_without_prefix() -> None:
    """int64's minimum (its negation overflows) is written as str() writes it; no prefix is an empty head
    (`make_key(a, b)` has no separator before `int:`); numpy arrays are keyed as Python ints."""
    lo, hi = -(2**63), 2**63 - 1
    a, b = [lo, lo + 1, -1, 0, hi], [hi, lo, 0, -10, lo]
    assert keykernel.prefix_bytes() == b""
    for head in ((), ("s",)):
        want = [make_key(*head, x, y) for x, y in zip(a, b)]
        h = [keykernel.prefix_bytes(*head)]
        assert keykernel.pair_keys(h, [0] * 5, a, b) == want
        assert keykernel.pair_keys(h, np.zeros(5, dtype=np.int64), np.array(a), np.array(b)) == want
