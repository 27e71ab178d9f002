"""The tracer's fast paths give exactly what the slow ones give.

- `IndexEngine.docs_by_ranks` reads windows and metadata from its own maps of the shard files; the engine's
  `get_docs_by_ranks_2` (`native=True`) is the reference: every field of every record must be equal, for
  windows clipped at a document start or end, zero context, whole documents, every shard, u8 and u16,
  several index folders (document numbering continues across folders).
- `lcp_at_rank` compares raw bytes; the reference walks the suffix's tokens.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest

from ingest.index import IndexEngine, build_index, load_tokenizer


def _texts() -> list[str]:
    files = sorted(Path(os.__file__).parent.glob("*.py"))[:30]
    texts = [f.read_text(encoding="utf-8", errors="replace")[:2500] for f in files]
    texts += ["short", "x", "Permission is hereby granted, free of charge.\n" * 3] * 2
    return texts


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("fast-corpus")
    texts = _texts()
    with open(root / "docs.jsonl", "w") as f:
        for i, t in enumerate(texts):
            f.write(json.dumps({"text": t, "id": f"d{i}", "domain": "code" if i % 3 else "other",
                                "note": "\u00e9t\u00e9 \u2014 caf\u00e9"}) + "\n")
    return root, texts


@pytest.fixture(scope="module")
def bpe(corpus, tmp_path_factory):
    from conftest import byte_level_bpe

    tok = byte_level_bpe(corpus[1], 600)
    path = tmp_path_factory.mktemp("fast-tok") / "tokenizer.json"
    tok.save(str(path))
    return path


@pytest.fixture(scope="module", params=["bytes-2", "bpe-3", "bpe-1+2"])
def engine(request, corpus, bpe, tmp_path_factory):
    kind, shards = request.param.split("-")
    spec = "bytes" if kind == "bytes" else str(bpe)
    dirs = []
    for k in shards.split("+"):
        out = tmp_path_factory.mktemp("fast-idx") / f"idx-{kind}-{k}"
        build_index([corpus[0]], spec, out, shards=int(k), progress=False)
        dirs.append(str(out))
    eng = IndexEngine(dirs, reopen_every=50, memory_budget=0)  # reopening mid-test must not change answers
    yield eng, load_tokenizer(spec)
    eng.close()


def _ranks_of_ptrs(eng, s: int) -> dict[int, int]:
    """ptr -> rank for a whole (small) shard, from the raw suffix array."""
    import numpy as np

    m = eng._maps_for(s)
    raw = np.frombuffer(m.table, dtype=np.uint8).reshape(m.tok_cnt, m.ptr_size).astype(np.uint64)
    ptrs = sum(raw[:, i] << np.uint64(8 * i) for i in range(m.ptr_size))
    return {int(p): r for r, p in enumerate(ptrs)}


def _requests(eng, rng: random.Random, n: int) -> list[tuple[int, int]]:
    """Random ranks plus the first and last token of every document (windows clipped at both ends)."""
    reqs = []
    for s in range(eng.num_shards):
        m = eng._maps_for(s)
        rank_of = _ranks_of_ptrs(eng, s)
        w = eng.width
        edges = set()
        for i in range(m.n_docs):
            start = int(m.od[i]) + w
            end = int(m.od[i + 1]) if i + 1 < m.n_docs else m.tok_cnt * w
            if end > start:
                edges |= {rank_of[start], rank_of[end - w]}
        n_docs = m.n_docs
        ranks = sorted(edges) + [rng.randrange(m.tok_cnt - n_docs) for _ in range(n)]
        reqs += [(s, r) for r in ranks]
    return reqs


@pytest.mark.parametrize("needle,ctx", [(0, 0), (1, 0), (4, 3), (7, 50), (3, 100_000)])
def test_doc_windows_equal_get_docs_by_ranks_2(engine, needle, ctx) -> None:
    eng, _ = engine
    reqs = _requests(eng, random.Random(needle * 7 + ctx), 60)
    fast = eng.docs_by_ranks(reqs, needle_len=needle, max_ctx_len=ctx)
    slow = eng.docs_by_ranks(reqs, needle_len=needle, max_ctx_len=ctx, native=True)
    assert len(fast) == len(slow) == len(reqs)
    assert fast == slow  # dataclass equality: every field, tokens and metadata included
    assert any(d.window_start == 0 for d in fast)  # clipped at a document start
    if needle + ctx:
        assert any(d.window_start + len(d.tokens) == d.doc_len for d in fast)  # ... and at an end
    if ctx >= 100_000:
        assert all(d.is_full for d in fast)


def test_doc_windows_of_find_segments(engine) -> None:
    eng, tok = engine
    for text in ("Permission is hereby", "import", "def ", "x"):
        q = tok.encode(text)
        res = eng.find(q)
        reqs = [(s, r) for s, (lo, hi) in enumerate(res["segment_by_shard"]) for r in range(lo, hi)][:300]
        assert reqs
        fast = eng.docs_by_ranks(reqs, needle_len=len(q), max_ctx_len=9)
        assert fast == eng.docs_by_ranks(reqs, needle_len=len(q), max_ctx_len=9, native=True)
        assert all(d.tokens[d.needle_offset:d.needle_offset + len(q)] == q for d in fast)


def test_separator_ranks_refused_on_both_paths(engine) -> None:
    eng, _ = engine
    last = eng.tok_cnt(0) - 1
    for native in (False, True):
        with pytest.raises(ValueError):
            eng.docs_by_ranks([(0, last)], native=native)
    assert eng.docs_by_ranks([]) == []


def test_lcp_at_rank_equals_token_walk(engine) -> None:
    eng, tok = engine
    rng = random.Random(5)
    texts = _texts()
    for _ in range(150):
        t = rng.choice(texts)
        i = rng.randrange(len(t))
        ids = tok.encode(t[i:i + rng.randint(1, 60)] + rng.choice(["", "\u00ff\u0101", "zz", " qq"]))
        if not ids:
            continue
        s = rng.randrange(eng.num_shards)
        res = eng.find(ids)
        lo = res["segment_by_shard"][s][0]
        for rank in {0, max(0, lo - 1), min(lo, eng.tok_cnt(s) - 1), rng.randrange(eng.tok_cnt(s))}:
            suffix = eng.suffix_tokens(s, rank, len(ids))
            expect = 0
            for a, b in zip(ids, suffix):
                if a != b:
                    break
                expect += 1
            assert eng.lcp_at_rank(s, rank, ids) == expect


# ------------------------------------------------------------------------------------------ byte-level lookups


def _lookup_queries(eng, tok, rng: random.Random) -> list[list[int]]:
    texts = _texts()
    qs = []
    for _ in range(120):
        t = rng.choice(texts)
        i = rng.randrange(len(t))
        ids = tok.encode(t[i:i + rng.randint(1, 80)])
        if ids and rng.random() < 0.4:  # mostly absent beyond the edit
            ids = ids[:rng.randrange(len(ids) + 1)] + tok.encode(rng.choice(["zq", "\u00ff", " ", "Q"])) + ids
        if ids:
            qs.append(ids)
    # insertion rank 0 and rank = size in every shard: the smallest and largest suffixes, then a token that
    # sorts before / after what follows them
    for s in range(eng.num_shards):
        size = eng.tok_cnt(s) - eng._shards[s][2].n_docs  # the real suffixes (separators sort last)
        for rank in (0, 1, size - 1):
            suf = eng.suffix_tokens(s, rank, 6)
            for k in range(1, len(suf)):
                smaller = [t for t in range(min(eng.separator_id, 300)) if eng.ids_bytes([t]) < eng.ids_bytes([suf[k]])]
                larger = [t for t in range(min(eng.separator_id, 300)) if eng.ids_bytes([t]) > eng.ids_bytes([suf[k]])]
                if smaller:
                    qs.append(suf[:k] + [smaller[0]])
                if larger:
                    qs.append(suf[:k] + [larger[-1]])
    return qs


def test_byte_level_lookups_equal_the_engine(engine) -> None:
    eng, tok = engine
    qs = _lookup_queries(eng, tok, random.Random(11))
    assert len(qs) > 150
    rank0 = 0
    for q in qs:
        qb = eng.ids_bytes(q)
        f = eng.find(q)
        assert eng.find_bytes(qb) == f, q
        assert eng.count_bytes(qb) == eng.count(q) == f["cnt"]
        assert eng.occurs_bytes(qb) == (f["cnt"] > 0)
        assert eng.longest_prefix_bytes(qb) == eng.longest_prefix_len(q), q
        rank0 += any(lo == 0 for lo, _ in f["segment_by_shard"]) and f["cnt"] == 0
        # the insertion ranks of q are search hints for every prefix of q
        hints: list = []
        eng.longest_prefix_bytes(qb, hints)
        assert len(hints) == eng.num_shards
        for k in range(1, len(q) + 1):
            assert eng.find_bytes(qb[:k * eng.width], hints) == eng.find(q[:k]), (q, k)
    assert rank0 > 0  # the set really hits insertion rank 0
    with pytest.raises(ValueError):
        eng.ids_bytes([eng.separator_id])
    with pytest.raises(ValueError):
        eng.find_bytes(b"")


class _SlowEngine:
    """The engine without its fast paths: C++ count/find for lookups, get_docs_by_ranks_2 for windows."""

    def __init__(self, eng):
        self._e = eng

    def __getattr__(self, name):
        if name in ("ids_bytes", "occurs_bytes", "find_bytes", "count_bytes", "longest_prefix_bytes"):
            raise AttributeError(name)
        return getattr(self._e, name)

    def docs_by_ranks(self, requests, needle_len=0, max_ctx_len=0):
        return self._e.docs_by_ranks(requests, needle_len, max_ctx_len, native=True)


def _gens(tok) -> list[str]:
    rng = random.Random(3)
    texts = _texts()
    words = " ".join(texts[:6]).split()
    out = [texts[4][200:700], texts[30 if len(texts) > 30 else -1], "Permission is hereby granted, free of charge.\n",
           " ".join(rng.choice(words) for _ in range(60)), "zqxj " * 20, texts[2][:300] + "QQQ" + texts[5][:300],
           texts[7][:400].replace("    ", "\t"), texts[8][:300].replace("\n", "\r\n"), "\u00e9t\u00e9  caf\u00e9 " * 5]
    for t in texts[10:14]:  # edited slices
        w = t[:600].split(" ")
        for i in range(0, len(w), 9):
            w[i] = rng.choice(words)
        out.append(" ".join(w))
    return out


@pytest.mark.parametrize("mode", ["mixed", "text"])
def test_tracer_outputs_equal_without_fast_paths(engine, mode) -> None:
    from ingest.trace.matching import LookupStats, longest_matches
    from ingest.trace.params import TraceParams
    from ingest.trace.tracer import Tracer

    eng, tok = engine
    params = TraceParams(mode=mode, seed=5, dup_min_len=10, dup_prefix_len=8, window_factor=3)
    logp = eng.manifest.load_logprobs(eng.index_dirs[0])
    fast = Tracer(eng, tok, logp, -30.0, params, "t")
    slow = Tracer(_SlowEngine(eng), tok, logp, -30.0, params, "t")
    tiers = set()
    for i, text in enumerate(_gens(tok)):
        ids = tok.encode(text)
        st_fast, st_slow = LookupStats(), LookupStats()
        assert longest_matches(eng, ids, st_fast) == longest_matches(_SlowEngine(eng), ids, st_slow)
        assert st_fast == st_slow
        a, b = fast.trace(f"g{i}", text), slow.trace(f"g{i}", text)
        assert a.spans == b.spans and a.documents == b.documents and a.counts == b.counts
        tiers |= {d["match_tier"] for d in a.documents}
    assert tiers == {"exact_full_raw", "exact_full_normalized", "partial"}


def test_ascii_prefilter_never_hides_a_normalized_match() -> None:
    from ingest.trace.normalize import normalize_document
    from ingest.trace.tracer import _Gen

    class _E:
        width = 1

        def ids_bytes(self, ids):
            return bytes(ids)

        def find_bytes(self, qb):
            raise AssertionError

    rng = random.Random(9)
    alphabet = ["a", "b", " ", "  ", "\t", "\n", "\r\n", "\r", "\n\n\n", "\x0b", "\x0c", "\u00a0", "\ufb01",
                "\u00e9", "."]
    found = 0
    for _ in range(4000):
        gen = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 8)))
        window = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
        if rng.random() < 0.5:  # plant the generation, with its whitespace changed
            i = rng.randint(0, len(window))
            planted = gen.replace(" ", rng.choice([" ", "\t", "  "])).replace("\n", rng.choice(["\n", "\r\n", " \n "]))
            window = window[:i] + planted + window[i:]
        g = _Gen(_E(), gen, [])
        truth = bool(g.norm_doc) and g.norm_doc in normalize_document(window)
        found += truth
        if truth:
            assert g.maybe_in(window), (gen, window)
    assert found > 500


def test_fast_decoder_equals_the_tokenizer(bpe) -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    from ingest.index.tokenizer import HFTokenizer
    from ingest.trace.tracer import _byte_level_table, _fast_decoder

    texts = _texts() + ["caf\u00e9 \u2014 \u4e2d\u6587 \U0001f389 na\u00efve\r\n\t x" * 4]
    rng = random.Random(2)
    # a byte-level BPE: the table is used; windows cut inside a multi-byte character fall back
    tok = load_tokenizer(bpe)
    assert _byte_level_table(tok._backend) is not None
    fast = _fast_decoder(tok)
    for t in texts:
        ids = tok.encode(t)
        for _ in range(10):
            a, b = sorted(rng.randrange(len(ids) + 1) for _ in range(2))
            assert fast(ids[a:b]) == tok.decode(ids[a:b])
    assert fast([0, *tok.encode("x")]) == tok.decode([0, *tok.encode("x")])  # the special token
    # a tokenizer with another decoder: never the table, same text
    wp = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    wp.pre_tokenizer = pre_tokenizers.Whitespace()
    wp.decoder = decoders.WordPiece()
    trainer = trainers.WordPieceTrainer(vocab_size=300, special_tokens=["[UNK]"], show_progress=False)
    wp.train_from_iterator(texts, trainer)
    assert _byte_level_table(wp) is None
    wtok = HFTokenizer(wp, name="wp", vocab_size=wp.get_vocab_size(), dtype="u16", kind="file")
    wfast = _fast_decoder(wtok)
    for t in texts[:5]:
        ids = wtok.encode(t)
        assert wfast(ids) == wtok.decode(ids)


def test_a_piece_occurs_exactly_when_the_longest_match_reaches_its_end(engine) -> None:
    """The compiled tracer answers step 1 (full match) and step 7 (does a union occur) from step 2's longest
    matches: ids[b:e] occurs iff n(b) >= e - b. Checked against the engine's own search."""
    from ingest.trace.matching import longest_matches

    eng, tok = engine
    rng = random.Random(4)
    checked = occurring = 0
    for text in _gens(tok):
        ids = tok.encode(text)
        if not ids:
            continue
        n = longest_matches(eng, ids)
        pieces = [(0, len(ids))] + [(b, rng.randint(b + 1, min(len(ids), b + 2 * n[b] + 2)))
                                    for b in (rng.randrange(len(ids)) for _ in range(60))]
        for b, e in pieces:
            found = eng.occurs_bytes(eng.ids_bytes(ids[b:e]))
            assert (n[b] >= e - b) == found, (b, e, n[b])
            checked += 1
            occurring += found
    assert occurring > 50 and checked - occurring > 50
