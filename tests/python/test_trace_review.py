"""An independent review of the tracer's compiled path (commits 197aca2..b5cfecc): cases the benchmark digest
cannot see. The differential runs of the old (f216ec4) and new tracer on other indexes and inputs are described
in the commit that adds this file; pinned here is what they, or reading the code, found."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ingest.index import IndexEngine, build_index


@pytest.fixture(scope="module")
def bytes4(tmp_path_factory):
    """A byte-level index in 4 shards: each token's first-token row holds 4 (lo, hi) pairs."""
    root = tmp_path_factory.mktemp("review-corpus")
    (root / "docs.jsonl").write_text("".join(
        json.dumps({"text": "".join(chr(32 + (i * 7 + k * 13) % 95) for k in range(120))}) + "\n" for i in range(16)))
    out = tmp_path_factory.mktemp("review-idx") / "idx-bytes-4"
    build_index([root], "bytes", out, shards=4, progress=False)
    eng = IndexEngine([str(out)], reopen_every=None)
    yield eng
    eng.close()


def test_plan_bytes_refills_a_first_token_row_that_is_only_partly_written(bytes4):
    """plan_bytes fills the shared dense first-token table on first use, from several trace threads at once.
    numpy copies `dense[toks]` without the GIL, so a reader can see another thread's first write of a token's
    row half done: (lo, hi) of the first shards set, the later ones still -1 (measured: a tight writer loop
    against `dense[toks]` reads rows newer at the front than at the back). Treating such a row as filled gives
    that token an empty - even negative - rank range in the later shards: n(b), spans and counts silently
    wrong. The state such a read sees is pinned here: a row is filled only when all of it is."""
    eng = bytes4
    q = eng.ids_bytes(list(b"the quick brown fox, 12345 ~!"))
    ref = eng.plan_bytes(q)
    if ref is None:
        pytest.skip("compiled searches unavailable")
    assert eng._first_dense is not None and (ref.fhi > ref.flo).any()
    t = q[0]
    eng._first_dense[t, 1:, :] = -1  # a write seen half done: shard 0 set, shards 1..3 not yet
    p = eng.plan_bytes(q)
    assert np.array_equal(p.flo, ref.flo) and np.array_equal(p.fhi, ref.fhi)
    cnt, _, _ = eng.find_many_bytes(p, [0], [1])
    assert cnt == [eng.count_bytes(q[:1])]


def test_metadata_cache_is_bounded_in_bytes_too() -> None:
    """The tracer keeps each document's formatted metadata (cae9f9b), "bounded: cleared past 20,000 documents,
    a few MiB". Metadata is every field of a corpus record but its text, so 20,000 documents of large records
    (quality signals, raw HTML, long attributes) held one tracer - one per worker process - at gigabytes.
    The cache must stay within a few dozen MiB whatever the records' size, and still answer right."""
    from ingest.index.tokenizer import BytesTokenizer
    from ingest.trace.params import TraceParams
    from ingest.trace.tracer import Tracer

    big = "x" * (1 << 19)

    class _Engine:
        def docs_by_ranks(self, requests, needle_len=0, max_ctx_len=0):
            raise AssertionError

        def doc_metadata(self, shard, local):
            return "p.jsonl", local, {"id": local, "raw": big}

    tr = Tracer(_Engine(), BytesTokenizer(), np.zeros(256), -30.0, TraceParams(), "t")
    for i in range(120):  # 60 MiB of metadata
        f = tr._doc_fields(0, i)
        assert f[0] == str(i) and json.loads(f[3]) == {"id": i, "raw": big, "_path": "p.jsonl", "_linenum": i}
    held = sum(len(v[3]) for v in tr._meta.values())
    assert held <= 40 << 20, f"the metadata cache holds {held >> 20} MiB"


def test_window_scan_reserves_what_it_can_write_not_the_longest_token_per_token() -> None:
    """`scan_windows` decodes into one buffer sized ntok x (the longest token's bytes) (8f3fce1: no counting
    pass). Real byte tables have tokens of 128 (GPT-2, Llama 3) to 512 bytes (GPT-NeoX, runs of spaces), ~6 on
    average, so a long generation's windows reserved 20-80x their size: gigabytes of address space per call
    (refused under a strict overcommit policy or `ulimit -v`), and any vocabulary with one very long token
    reserves without bound. Here one 1 MiB token and 100,000 one-byte tokens: the buffer must stay near the
    bytes the windows decode to."""
    from ingest.trace import windowkernel as wk

    if not wk.available():
        pytest.skip("compiled window scan unavailable")
    long = 1 << 20
    tb = np.frombuffer(b"a " + b"b" * long, dtype=np.uint8)  # ids: 0 "a", 1 " ", 2 one MiB of "b"
    toff = np.array([0, 1, 2, 2 + long], dtype=np.int64)
    n = 100_000
    win = np.zeros(n + 2, dtype=np.uint8)
    win[n:] = (1, 2)  # window 1: a space, then the long token
    gen = np.frombuffer(b"aaa", dtype=np.uint8)  # read-only, as the tracer passes it (one compiled variant)
    res = np.zeros((2, 7), dtype=np.int64)
    try:
        text, off = wk.scan_windows(win, np.array([0, n]), np.array([n, n + 2]), 1, tb, toff, gen, gen, gen,
                                    np.zeros(0, dtype=np.uint8), np.zeros(6, dtype=np.int64),
                                    np.array([0, 0]), res, np.zeros(0, dtype=np.uint8))
    except MemoryError:
        pytest.fail("the window scan asked for (ntok x the longest token) bytes: 100 GiB")
    assert text[off[0]:off[1]].tobytes() == b"a" * n and text[off[1]:off[2]].tobytes() == b" " + b"b" * long
    assert res[:, :3].tolist() == [[1, 1, wk.RAW], [1, 1, wk.PARTIAL]]
    assert text.shape[0] <= 2 * (n + 1 + long), f"{text.shape[0] >> 20} MiB reserved for {(n + 1 + long) >> 20} MiB"


def test_span_keys_and_lazy_rng_equal_what_they_replace() -> None:
    """The tracer hashes span and span-document keys with a prefix encoded once, many in one compiled call
    (`keykernel.pair_keys`), and seeds the sampling RNG at its first draw (`_LazyRng`); the lake's
    `make_key` and `rng_for` are the oracles."""
    import random

    from ingest.lake import make_key
    from ingest.trace import keykernel
    from ingest.trace.tracer import _LazyRng, rng_for

    rng = random.Random(3)
    parts = ["", "a", "\x1f", "\x00", "caf\u00e9", "str:x", None, 0, 7, -1, "12"]
    heads, which, a, b, want = [], [], [], [], []
    for _ in range(500):
        head = [rng.choice(parts) for _ in range(rng.randint(1, 3))]
        x, y = rng.randint(-5, 10**6), rng.randint(0, 10**6)
        s = rng.choice(["", "x", "span\x1fid", "\u00e9"])
        for h in (head, [s]):
            heads.append(keykernel.prefix_bytes(*h))
            which.append(len(heads) - 1)
            a.append(x)
            b.append(y)
            want.append(make_key(*h, x, y))
    assert keykernel.pair_keys(heads, which, a, b) == want
    assert keykernel.pair_keys(heads, [], [], []) == []
    for seed, text in ((0, ""), (1, "abc"), (42, "caf\u00e9 \U0001f600")):
        eager, lazy = rng_for(seed, text), _LazyRng(seed, text)
        for n, k in ((100, 10), (11, 10), (10**9, 10), (50, 1)):
            assert lazy.sample(range(n), k) == eager.sample(range(n), k)
