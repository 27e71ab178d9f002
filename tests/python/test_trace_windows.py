"""The compiled window path of the tracer gives exactly what the Python steps give.

- `windowkernel.scan_windows` (decode through a byte table, strict UTF-8, tiers, nv-recall) against Python's
  own `bytes.decode`, `normalize_document` and `nv_recall_words` on random windows: invalid and truncated
  UTF-8, surrogates, overlong forms, ASCII whitespace of every kind, planted and respaced generations.
- `tierkernel.normalized_holds` on NFKC-normal non-ASCII windows against `normalize_document`.
- `IndexEngine.windows_bytes` / `find_many_bytes` against `docs_by_ranks` / `find_bytes` on a small index,
  and a moved suffix-array entry refused (the caller then raises through `docs_by_ranks`).
The whole tracer (compiled path against the slow engine) is compared in test_trace_fast.py.
"""

from __future__ import annotations

import json
import random
import re

import numpy as np
import pytest

from ingest.trace import windowkernel as wk
from ingest.trace.normalize import normalize_document, normalize_words, plain_chars, words_text
from ingest.trace.nvrecall import PreparedGeneration, nv_recall_words

pytestmark = pytest.mark.skipif(not wk.available(), reason=f"numba unavailable: {wk._LOAD_ERROR}")

# token i = byte i (the bytes tokenizer's table); array kinds as the tracer passes them (read-only table,
# writable window buffer), so the kernel's cached compilation is reused
_TABLE = np.frombuffer(bytes(range(256)), dtype=np.uint8)
_TOFF = np.arange(257, dtype=np.int64)
_TIER = {wk.RAW: "exact_full_raw", wk.NORMALIZED: "exact_full_normalized", wk.PARTIAL: "partial"}


_PLAIN = np.frombuffer(plain_chars(), dtype=np.uint8)


def _scan(gen: str, windows: list[bytes], want: int = 1):
    buf = np.frombuffer(bytearray(b"".join(windows)), dtype=np.uint8)
    ends = np.cumsum([len(w) for w in windows]).astype(np.int64)
    starts = ends - np.array([len(w) for w in windows], dtype=np.int64)
    norm = normalize_document(gen)
    words = normalize_words(gen)
    pg = PreparedGeneration(words) if words else None
    res = np.zeros((len(windows), 7), dtype=np.int64)
    text, off = wk.scan_windows(
        buf, starts, ends, 1, _TABLE, _TOFF, np.frombuffer(gen.encode(), dtype=np.uint8),
        np.frombuffer(norm.encode(), dtype=np.uint8), np.frombuffer("".join(norm.split()).encode(), dtype=np.uint8),
        pg.buf if pg else np.zeros(0, dtype=np.uint8), pg.param_array if pg else np.zeros(6, dtype=np.int64),
        np.full(len(windows), want, dtype=np.int64), res, _PLAIN)
    return text, off, res, pg


def _python_tier(gen: str, window: str) -> str:
    norm = normalize_document(gen)
    if gen and gen in window:
        return "exact_full_raw"
    if norm and norm in normalize_document(window):
        return "exact_full_normalized"
    return "partial"


def test_decoding_accepts_exactly_what_python_decodes() -> None:
    rng = random.Random(4)
    pieces = [b"a", b" ", b"\n", "\u00e9".encode(), "\u20ac".encode(), "\U0001f389".encode(), b"\xc3", b"\xa9",
              b"\xe2\x82", b"\xed\xa0\x80", b"\xc0\x80", b"\xe0\x80\x80", b"\xf4\x90\x80\x80", b"\xf5", b"\xff",
              b"\xf0\x9f\x8e", b"\xef\xbf\xbf", b"\xf4\x8f\xbf\xbf", b"\xe0\xa0\x80", b"\xf0\x90\x80\x80"]
    windows = [b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 12))) for _ in range(3000)]
    windows += [bytes([b]) for b in range(256)] + [bytes([a, b]) for a in range(0xC0, 0x100, 3) for b in range(0x70, 0xD0)]
    text, off, res, _ = _scan("zz", windows)
    valid = 0
    for i, w in enumerate(windows):
        try:
            want = w.decode("utf-8")
        except UnicodeDecodeError:
            want = None
        assert bool(res[i, 0]) == (want is not None), w
        if want is not None:
            valid += 1
            assert text[off[i]:off[i + 1]].tobytes().decode("utf-8") == want
            assert (res[i, 1] == 1) == want.isascii()
    assert 500 < valid < len(windows) - 500


def test_tiers_and_nv_recall_equal_the_python_steps() -> None:
    rng = random.Random(7)
    # non-ASCII: plain (e, u with accents: the compiled scan answers) and not (uppercase, a combining mark,
    # a dash the typography step rewrites, a no-break space: Python answers)
    words = ["def", "return", "x", "Foo", "BAR", "(a,", "b)", "==", "caf\u00e9", "\u00fcber", "'q'", "1.5",
             "\u201cq\u201d", "a\u2014\u2013b", "\u2018s\u2019", "\U0001f6a8",
             "\u00c9t\u00e9", "na\u0308ive", "x\u00a0y", "\u2026"]

    def simple(w: str) -> bool:  # by construction (the normalized generation holds a\u0308 composed: \u00e4)
        return all(c.isascii() or c in "\u00e9\u00fc\u00e4\u201c\u201d\u2014\u2013\u2018\u2019\U0001f6a8" for c in w)

    seps = [" ", "  ", "\t", "\n", "\r\n", "\n\n\n", " \n ", "\x0b", "\x0c", "\x1c"]
    seen = {t: 0 for t in _TIER.values()}
    for _ in range(150):
        gen = "".join(rng.choice(words) + rng.choice(seps[:5]) for _ in range(rng.randint(0, 14))).strip(" ")
        windows = []
        for _ in range(12):
            pool = words if rng.random() < 0.4 else words[:16]  # not-plain characters in some windows only
            w = "".join(rng.choice(pool) + rng.choice(seps) for _ in range(rng.randint(0, 60)))
            r = rng.random()
            if gen and r < 0.3:  # the generation itself
                k = rng.randint(0, len(w))
                w = w[:k] + gen + w[k:]
            elif gen and r < 0.6:  # its normalized form, respaced
                k = rng.randint(0, len(w))
                sp = normalize_document(gen).replace(" ", rng.choice(["  ", "\t", " \t"]))
                w = w[:k] + sp.replace("\n", rng.choice(["\r\n", " \n", "\n \n"])) + w[k:]
            windows.append(w)
        for want in (1, 2):
            _, _, res, pg = _scan(gen, [w.encode() for w in windows], want)
            for i, w in enumerate(windows):
                assert res[i, 0] == 1 and (res[i, 1] == 1) == w.isascii() and bool(res[i, 1]) == simple(w)
                truth = _python_tier(gen, w)
                if res[i, 2]:
                    assert _TIER[res[i, 2]] == truth, (gen, w)
                    seen[truth] += 1
                else:  # left to Python: only windows with other non-ASCII characters, without the raw text
                    assert not simple(w) and truth != "exact_full_raw"
                done = res[i, 3] == wk.NV_DONE
                if done:
                    nv = nv_recall_words(pg.words, normalize_words(w), pg.params)
                    assert (res[i, 4], res[i, 5], res[i, 6]) == (nv.matched_words, nv.generation_words,
                                                                 nv.document_words), (gen, w)
                # computed exactly when asked for and answerable here
                expect = bool(pg) and simple(w) and (want == 1 or truth != "partial")
                assert done == expect
    assert min(seen.values()) > 20, seen


def test_plain_characters_leave_every_normalization_to_ascii_steps() -> None:
    """The claim `scan_windows` rests on, checked with Python's own functions as the oracle: in a text of ASCII
    and plain characters (random ones, and the plain neighbours of composing, decomposing and case-changing
    characters), NFKC changes nothing, lower() changes ASCII letters only, split() splits on ASCII
    whitespace only, and both normalizations equal their ASCII steps on the UTF-8 bytes."""
    import unicodedata

    from ingest.trace import tierkernel

    table = plain_chars()
    plain = [chr(c) for c in range(0x80, len(table)) if table[c] == 1]  # (typography: the next test)
    # the hard neighbours: plain characters next to those that compose, reorder, change case or are spaces
    near = [chr(c) for c in (0xE9, 0xF1, 0x3B1, 0x3C9, 0x430, 0x4E2D, 0xAC00, 0x0B95, 0x0D9A, 0x0DD9, 0x1B05, 0xFB01,
                             0x1F6A8, 0x1F600) if table[c] == 1]
    assert {"\u00e9", "\u4e2d", "\u00f1", "\U0001f6a8"} <= set(near) and not any(
        table[c] for c in (0xC9, 0x301, 0x308, 0xA0, 0x2003, 0x2026, 0x2033, 0xFE58, 0x1161, 0x11A8, 0x0BBE, 0xFB01,
                           0x3A3, 0x1D400))
    assert [table[c] for c in (0x2014, 0x2013, 0x2018, 0x2019, 0x201C, 0xAB)] == [4, 4, 2, 2, 3, 3]
    ascii_ = list("abcXYZ .,\t\n\r\x0b\x1c") + ["  ", "\r\n", "\n\n\n"]
    rng = random.Random(11)
    for _ in range(3000):
        t = "".join(rng.choice(ascii_) if rng.random() < 0.5 else rng.choice(plain if rng.random() < 0.5 else near)
                    for _ in range(rng.randint(0, 30)))
        assert unicodedata.normalize("NFKC", t) == t, repr(t)
        low = t.encode().lower().decode()  # bytes.lower(): ASCII letters only
        assert t.lower() == low and words_text(t) == low, repr(t)
        assert t.split() == re.split(r"[ \t\n\x0b\x0c\r\x1c-\x1f]+", t.strip(" \t\n\x0b\x0c\r\x1c\x1d\x1e\x1f")) or not \
            t.strip(" \t\n\x0b\x0c\r\x1c\x1d\x1e\x1f"), repr(t)
        got = tierkernel.normalize_ascii(np.frombuffer(t.encode(), dtype=np.uint8)).tobytes().decode()
        assert got == normalize_document(t), repr(t)


def test_normalized_tier_of_nfkc_normal_windows_equals_normalize_document() -> None:
    from ingest.trace import tierkernel

    rng = random.Random(2)
    alphabet = ["a", "b", " ", "  ", "\t", "\n", "\r\n", "\r", "\n\n\n", "\x0b", "\x1f", "\x85", "\u2028", "\u00e9",
                "\u00a0", "\u3000", "\ufb01", "\u2014", "."]
    answered = found = 0
    for _ in range(6000):
        gen = normalize_document("".join(rng.choice(alphabet) for _ in range(rng.randint(1, 6))))
        window = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 25)))
        if gen and rng.random() < 0.5:
            k = rng.randint(0, len(window))
            window = window[:k] + gen.replace(" ", rng.choice([" ", "\t", "  "])) + window[k:]
        if not gen:
            continue
        held = tierkernel.normalized_holds(gen.encode(), window)
        truth = gen in normalize_document(window)
        if held is not None:
            answered += 1
            found += truth
            assert held == truth, (gen, window)
            assert tierkernel.normalized_holds(gen.encode(), window, window.encode()) == truth
    assert answered > 600 and found > 150, (answered, found)


@pytest.fixture(scope="module")
def small_index(tmp_path_factory):
    from ingest.index import IndexEngine, build_index

    root = tmp_path_factory.mktemp("win-corpus")
    rng = random.Random(5)
    vocab = ["alpha", "beta", "gamma", "delta", "caf\u00e9", "\n", "  ", "x = 1", "return y"]
    with open(root / "docs.jsonl", "w") as f:
        for i in range(60):
            text = " ".join(rng.choice(vocab) for _ in range(rng.randint(1, 80)))
            f.write(json.dumps({"text": text, "id": f"d{i}", "source": "s"}) + "\n")
    out = tmp_path_factory.mktemp("win-idx") / "idx"
    build_index([root], "bytes", out, shards=2, progress=False)
    eng = IndexEngine(str(out), reopen_every=None)
    yield eng
    eng.close()


def test_engine_windows_equal_docs_by_ranks(small_index) -> None:
    eng = small_index
    rng = random.Random(8)
    texts = ["alpha beta", "gamma", "caf\u00e9 delta", "return y alpha", "x = 1 x = 1", "beta  gamma"]
    for text in texts:
        qb = eng.ids_bytes(list(text.encode()))
        plan = eng.plan_bytes(qb)
        L = len(qb)
        pieces = [(b, min(L, b + rng.randint(1, 8))) for b in range(L) for _ in range(2)]
        cnts, lo, hi = eng.find_many_bytes(plan, [b for b, _ in pieces], [e for _, e in pieces])
        for i, (b, e) in enumerate(pieces):
            f = eng.find_bytes(qb[b:e])
            assert cnts[i] == f["cnt"] and list(zip(lo[i].tolist(), hi[i].tolist())) == f["segment_by_shard"]
        shards, ranks, starts, ends = [], [], [], []
        for i, (b, e) in enumerate(pieces):
            for s in range(eng.num_shards):
                for r in range(int(lo[i, s]), min(int(hi[i, s]), int(lo[i, s]) + 3)):
                    shards.append(s)
                    ranks.append(r)
                    starts.append(b)
                    ends.append(e)
        for ctx in (0, 3, 40):
            wb = eng.windows_bytes(plan, shards, ranks, starts, ends, ctx)
            assert wb is not None and len(ranks) > 20
            for i, (s, r, b, e) in enumerate(zip(shards, ranks, starts, ends)):
                (d,) = eng.docs_by_ranks([(s, r)], needle_len=e - b, max_ctx_len=ctx, found=True)
                assert (int(wb.shard[i]), int(wb.doc_ix[i]), int(wb.doc_len[i]), int(wb.window_start[i])) == \
                    (d.shard, d.doc_ix, d.doc_len, d.window_start)
                assert wb.buf[wb.boff[i]:wb.boff[i + 1]].tolist() == d.tokens
                assert eng.doc_metadata(s, int(wb.local[i])) == (d.path, d.linenum, d.metadata)
    # a rank whose suffix does not hold the piece (what a moved suffix-array entry looks like): refused
    qb = eng.ids_bytes(list(b"alpha"))
    plan = eng.plan_bytes(qb)
    _, lo, _ = eng.find_many_bytes(plan, [0], [5])
    s = int(np.argmax(lo[0] > 0))
    assert eng.windows_bytes(plan, [s], [int(lo[0, s]) - 1], [0], [5], 4) is None
    assert eng.windows_bytes(plan, [s], [eng.tok_cnt(s)], [0], [5], 4) is None  # past the suffix array


def test_word_normalization_shortcuts_equal_the_plain_definition() -> None:
    """`normalize_words` skips the typography rewrites when none applies, and nv-recall splits non-ASCII
    windows on ASCII bytes when no other whitespace remains: both against the plain chain of steps."""
    import unicodedata

    from ingest.trace import normalize as nz

    def plain(text: str) -> list[str]:
        t = unicodedata.normalize("NFKC", text).translate(nz._QUOTES)
        return nz._DASHES.sub("-", t).replace("\u2026", "...").lower().split()

    rng = random.Random(12)
    alphabet = list("aB \t\n.") + ["\u2019", "\u2014", "\u2026", "\u00c4", "\u0130", "\x85", "\u2028", "\u00a0",
                                   "\ufb01", "\u2212", "\U0001f6a8", "\u00ab", "\u2033", "\u3000", "\x1c"]
    for _ in range(20000):
        s = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 14)))
        want = plain(s)
        assert normalize_words(s) == want, repr(s)
        t = nz.words_text(s)
        if nz.splits_as_ascii(t):  # the kernel's split: space, \t-\r and \x1c-\x1f
            assert [w for w in re.split(rb"[ \t-\r\x1c-\x1f]+", t.encode()) if w] == [w.encode() for w in want]


def test_plan_without_the_dense_first_token_table(small_index, monkeypatch) -> None:
    """A vocabulary too large for the dense table plans through the per-token dict: the same ranges."""
    from ingest.index import IndexEngine
    from ingest.index import engine as engine_module

    qb = small_index.ids_bytes(list("alpha beta caf\u00e9 zz".encode()))
    dense = small_index.plan_bytes(qb)
    monkeypatch.setattr(engine_module, "_DENSE_FIRST_MAX", 0)
    eng = IndexEngine(small_index.index_dirs, reopen_every=None)
    try:
        plan = eng.plan_bytes(qb)
        assert eng._first_dense is None
        assert (plan.flo == dense.flo).all() and (plan.fhi == dense.fhi).all()
    finally:
        eng.close()
