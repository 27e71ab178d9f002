"""The compiled suffix-array searches (`ingest.index.sa_search`) against brute force.

Oracle: a suffix array built here by sorting the token-aligned suffixes as Python bytes, and for every query
the definition itself: the lower (upper) bound of q in [lo, hi) is the first rank there whose suffix, cut to
len(q) bytes, is not < q (not <= q); q occurs when some suffix starts with it; the longest prefix is the
longest common prefix with *any* suffix. Token widths 1, 2 (u16) and 4 (u32), pointers of the natural
width and of 5 bytes, empty ranges, empty queries and queries longer than the whole file. Then the engine's
pure-Python fallback against its compiled path on a real index, and the compiled per-generation loop
(`longest_matches_bytes`) against the Python loop and the definition of n(b) (C++ counts).
"""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from ingest.index import sa_search


def _suffix_array(data: bytes, w: int) -> list[int]:
    return sorted(range(0, len(data), w), key=lambda p: data[p:])


def _lcp(a: bytes, b: bytes) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def _corpus(rng: random.Random, w: int, n_tokens: int) -> tuple[bytes, list[bytes]]:
    sep = b"\xff" * w
    out = bytearray()
    vocab = [rng.randrange(0, 256 ** w - 1).to_bytes(w, "little") for _ in range(6)]  # few tokens: many repeats
    while len(out) < n_tokens * w:
        out += sep
        out += b"".join(rng.choice(vocab) for _ in range(rng.randrange(1, 30)))
    return bytes(out), vocab


def _queries(rng: random.Random, data: bytes, vocab: list[bytes], w: int) -> list[bytes]:
    qs = [b"", data, data + vocab[0], vocab[0] * 200]
    n = len(data) // w
    for _ in range(120):
        a = rng.randrange(n) * w
        q = data[a:a + w * rng.randrange(1, 12)]
        if rng.random() < 0.4:  # most likely absent: a changed last token
            q = q[:-w] + rng.choice(vocab)
        qs.append(q)
    qs += [rng.choice(vocab) for _ in range(10)]
    return qs


@pytest.mark.parametrize("w", [1, 2, 4])
@pytest.mark.parametrize("ps", ["natural", 5])
def test_bounds_equal_brute_force(w, ps) -> None:
    assert sa_search.available(), sa_search.load_error()
    rng = random.Random(w * 10 + (0 if ps == "natural" else 5))
    data, vocab = _corpus(rng, w, 400)
    sa = _suffix_array(data, w)
    ps = max(1, (len(data).bit_length() + 7) // 8) if ps == "natural" else ps
    table = np.frombuffer(b"".join(p.to_bytes(ps, "little") for p in sa), dtype=np.uint8)
    toks = np.frombuffer(data, dtype=np.uint8)
    n = len(sa)
    suffix = [data[p:] for p in sa]
    for qb in _queries(rng, data, vocab, w):
        q = np.frombuffer(qb, dtype=np.uint8)
        nb = len(qb)
        for lo, hi in [(0, n), (n // 3, n // 3), (0, 0), (n, n)] + [sorted((rng.randrange(n + 1), rng.randrange(n + 1)))
                                                                    for _ in range(4)]:
            lower = next((r for r in range(lo, hi) if not suffix[r][:nb] < qb), hi)
            upper = next((r for r in range(lo, hi) if not suffix[r][:nb] <= qb), hi)
            assert sa_search.bound(toks, table, ps, q, lo, hi, False) == lower
            assert sa_search.bound(toks, table, ps, q, lo, hi, True) == upper
            assert sa_search.find_range(toks, table, ps, q, lo, hi, -1) == (lower, upper)
            assert sa_search.occurs(toks, table, ps, q, lo, hi) == any(s.startswith(qb) for s in suffix[lo:hi])
        # over the whole array the insertion rank's neighbours hold the longest common prefix of all suffixes
        r, best = sa_search.longest_prefix(toks, table, ps, q, 0, n)
        assert r == next((k for k in range(n) if not suffix[k][:nb] < qb), n)
        assert best == max(_lcp(s, qb) for s in suffix)
        # a longer query's insertion rank is a hint for every prefix of it (galloping from the hint)
        for k in range(1, nb // w + 1):
            pb = qb[:k * w]
            p = np.frombuffer(pb, dtype=np.uint8)
            want = (next((x for x in range(n) if not suffix[x][:len(pb)] < pb), n),
                    next((x for x in range(n) if not suffix[x][:len(pb)] <= pb), n))
            assert sa_search.find_range(toks, table, ps, p, 0, n, r) == want, (qb, k)


def test_kernels_release_the_gil() -> None:
    assert sa_search.available(), sa_search.load_error()
    for f in (sa_search.bound, sa_search.bound_near, sa_search.find_range, sa_search.occurs,
              sa_search.longest_prefix, sa_search.longest_matches):
        assert f.targetoptions.get("nogil") is True, f


@pytest.mark.parametrize("spec", ["bytes", "bpe"])
def test_engine_fallback_equals_compiled(spec, tmp_path) -> None:
    from ingest.index import IndexEngine, build_index

    rng = random.Random(4)
    words = "the a of to in def class return self import None if else for".split()
    texts = [" ".join(rng.choice(words) for _ in range(rng.randrange(5, 80))) for _ in range(60)]
    with open(tmp_path / "d.jsonl", "w") as f:
        for t in texts:
            f.write(json.dumps({"text": t}) + "\n")
    if spec == "bpe":
        from conftest import byte_level_bpe

        byte_level_bpe(texts, 300).save(str(tmp_path / "tok.json"))
        spec = str(tmp_path / "tok.json")
    build_index([tmp_path / "d.jsonl"], spec, tmp_path / "idx", shards=2, progress=False)
    from ingest.index import load_tokenizer

    tok = load_tokenizer(spec)
    eng = IndexEngine(str(tmp_path / "idx"))
    slow = IndexEngine(str(tmp_path / "idx"))
    slow.compiled_search = False
    for i in range(150):
        t = texts[rng.randrange(len(texts))]
        a = rng.randrange(len(t))
        text = t[a:a + rng.randrange(1, 60)] + ("" if i % 3 else " zq the")
        qb = eng.ids_bytes(tok.encode(text))
        if not qb:
            continue
        h1: list = []
        h2: list = []
        assert eng.longest_prefix_bytes(qb, h1) == slow.longest_prefix_bytes(qb, h2)
        assert h1 == h2
        assert eng.occurs_bytes(qb) == slow.occurs_bytes(qb)
        for k in range(1, len(qb) // eng.width + 1):
            pb = qb[:k * eng.width]
            assert eng.find_bytes(pb) == slow.find_bytes(pb) == eng.find_bytes(pb, h1)
    # the whole per-generation loop, compiled in one call, against the Python loop and the definition
    from ingest.trace.matching import LookupStats, longest_matches

    for i in range(12):
        ids = tok.encode(" ".join(rng.choice(texts).split(" ")[:30]) + " zq " + rng.choice(texts))
        st1, st2, h1, h2 = LookupStats(), LookupStats(), {}, {}
        n = longest_matches(eng, ids, st1, h1)
        assert n == longest_matches(slow, ids, st2, h2)
        assert st1 == st2 and h1 == h2
        for b in range(len(ids)):  # n(b): tokens[b:b+n] occurs, tokens[b:b+n+1] does not (C++ counts)
            assert n[b] == 0 or eng.count(ids[b:b + n[b]]) > 0
            assert b + n[b] == len(ids) or eng.count(ids[b:b + n[b] + 1]) == 0
    assert eng.compiled_search is True and slow.compiled_search is False


def test_missing_numba_falls_back_with_a_warning(tmp_path, monkeypatch) -> None:
    from ingest.index import IndexEngine, build_index

    with open(tmp_path / "d.jsonl", "w") as f:
        for t in ("abc abd abe", "abd xyz abc", "zzz"):
            f.write(json.dumps({"text": t}) + "\n")
    build_index([tmp_path / "d.jsonl"], "bytes", tmp_path / "idx", shards=1, progress=False)
    eng = IndexEngine(str(tmp_path / "idx"))
    monkeypatch.setattr(sa_search, "available", lambda: False)
    monkeypatch.setattr(sa_search, "_warned", False)
    with pytest.warns(RuntimeWarning, match="pure Python"):
        assert eng.longest_prefix_bytes(b"abdq") == 3
    assert eng.compiled_search is False
    assert eng.longest_matches_bytes(b"abd") is None  # the caller runs the Python loop
    assert eng.find_bytes(b"ab")["cnt"] == 5 and eng.occurs_bytes(b"xyz") and not eng.occurs_bytes(b"xyq")
