"""SimpleTrace against brute force: longest match at every start, spans, documents, determinism.

The oracle concatenates the tokenized documents with -1 separators and finds occurrences with numpy;
it shares no code with the tracer or the suffix-array engine.
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import numpy as np
import pytest

from ingest.index import IndexEngine, build_index, load_tokenizer
from ingest.lake import Lake
from ingest.trace.matching import LookupStats, longest_matches, maximal_spans
from ingest.trace.params import TraceParams
from ingest.trace.run import TraceJob, open_tracer, trace_generations

N_DOCS = 40


def _texts() -> list[str]:
    files = sorted(Path(os.__file__).parent.glob("*.py"))[:N_DOCS]
    texts = [f.read_text(encoding="utf-8", errors="replace")[:3000] for f in files]
    boiler = "Permission is hereby granted, free of charge, to any person obtaining a copy of this software.\n"
    texts += [f"# header {i}\n" + boiler for i in range(5)]  # a duplicated span (count 5)
    return texts


BOILER = "Permission is hereby granted, free of charge, to any person obtaining a copy"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("trace-corpus")
    texts = _texts()
    with open(root / "docs.jsonl", "w") as f:
        for i, t in enumerate(texts):
            f.write(json.dumps({"text": t, "id": f"d{i}", "domain": "code" if i < N_DOCS else "license"}) + "\n")
    return root, texts


@pytest.fixture(scope="module")
def bpe(corpus, tmp_path_factory):
    from conftest import byte_level_bpe

    tok = byte_level_bpe(corpus[1], 800)
    path = tmp_path_factory.mktemp("tok") / "tokenizer.json"
    tok.save(str(path))
    return path


@pytest.fixture(scope="module", params=["bytes", "bpe"])
def index(request, corpus, bpe, tmp_path_factory):
    spec = "bytes" if request.param == "bytes" else str(bpe)
    out = tmp_path_factory.mktemp("idx") / f"idx-{request.param}-2"
    build_index([corpus[0]], spec, out, shards=2, progress=False)
    tok = load_tokenizer(spec)
    return out, tok, Oracle([tok.encode(t) for t in corpus[1]])


class Oracle:
    def __init__(self, docs: list[list[int]]):
        parts = []
        for d in docs:
            parts += [-1, *d]
        self.arr = np.asarray(parts + [-1], dtype=np.int64)

    def count(self, q) -> int:
        pos = np.flatnonzero(self.arr == q[0])
        for k, t in enumerate(q[1:], start=1):
            pos = pos[pos + k < len(self.arr)]
            pos = pos[self.arr[pos + k] == t]
        return len(pos)

    def longest(self, q) -> int:
        """Extend the match one token at a time, keeping the positions where it still occurs."""
        pos = np.flatnonzero(self.arr == q[0])
        n = 0
        while len(pos) and n < len(q):
            n += 1
            if n < len(q):
                pos = pos[pos + n < len(self.arr)]
                pos = pos[self.arr[pos + n] == q[n]]
        return n


def _inputs(texts: list[str], tok) -> list[str]:
    rng = random.Random(7)
    words = " ".join(texts[:5]).split()
    out = [
        texts[3][100:400],                                  # verbatim corpus text
        BOILER,                                             # duplicated boilerplate (full match, count 5)
        " ".join(rng.choice(words) for _ in range(40)),     # shuffled corpus words
        "zqxj vwkp " * 12,                                  # absent text, repeated
        "\x00\x01 ~~~~ \x7f\x7f" + texts[0][:50],           # insertion near rank 0 and the end
        "import os\n" * 20,                                 # adversarial repeats
        texts[1][:150] + "ZZZZ" + texts[2][:150],           # two verbatim pieces glued
        texts[N_DOCS][-60:],                                # the end of a document (match up to the end)
    ]
    return out


def test_longest_match_per_start_equals_brute_force(index, corpus) -> None:
    path, tok, oracle = index
    eng = IndexEngine(path)
    stats = LookupStats()
    checked = 0
    for text in _inputs(corpus[1], tok):
        ids = tok.encode(text)
        n = longest_matches(eng, ids, stats)
        for b in range(len(ids)):
            expect = oracle.longest(ids[b:])
            assert n[b] == expect, (text[:30], b, n[b], expect)
            checked += 1
    assert checked > 500
    assert stats.probes > 0 and stats.skipped_by_bound > 0 and stats.full_lookups < stats.starts


def test_maximal_spans_are_not_contained_in_others() -> None:
    assert maximal_spans([3, 2, 1, 0, 5, 4, 3, 2, 1]) == [(0, 3), (4, 9)]
    n = [3, 2, 1, 0, 3, 2, 2, 1]
    spans = maximal_spans(n)
    assert spans == [(0, 3), (4, 7), (6, 8)]
    brute = {(b, b + k) for b, k in enumerate(n) if k}
    expected = sorted(s for s in brute if not any(o != s and o[0] <= s[0] and s[1] <= o[1] for o in brute))
    assert spans == expected


def test_trace_finds_full_matches_documents_and_counts(index, corpus) -> None:
    path, tok, oracle = index
    tracer = open_tracer(TraceJob((str(path),), TraceParams()), "t")
    texts = corpus[1]
    # verbatim boilerplate occurring in 5 documents: a full match with exact_full_raw documents
    out = tracer.trace("g1", BOILER)
    full = [s for s in out.spans if s["is_full"]]
    assert len(full) == 1 and full[0]["count"] == oracle.count(tok.encode(BOILER)) == 5
    tiers = {d["match_tier"] for d in out.documents}
    assert tiers == {"exact_full_raw"}
    assert all(d["nv_recall"] == 1.0 for d in out.documents)
    assert {d["domain"] for d in out.documents} == {"license"}
    assert len({(d["shard"], d["doc_ix"]) for d in out.documents}) == 5
    # every stored span is maximal, long enough, and its count equals the oracle's
    gen = texts[1][:150] + "ZZZZ" + texts[2][:150]
    out = tracer.trace("g2", gen)
    ids = tok.encode(gen)
    L = len(ids)
    kept = [s for s in out.spans if s["kept"]]
    assert len(kept) <= max(1, (5 * L + 99) // 100)
    for s in out.spans:
        q = ids[s["start_tok"]:s["end_tok"]]
        assert s["length"] >= 4 and s["count"] == oracle.count(q) > 0
        if s["end_tok"] < L:
            assert oracle.count(ids[s["start_tok"]:s["end_tok"] + 1]) == 0
    # the longest span is kept or an anchor found a document; documents hold the span text
    for d in out.documents:
        span = next(s for s in out.spans if s["span_id"] == d["span_id"])
        assert span["text"] in d["window_text"]
    assert not [s for s in out.spans if s["is_full"]]


def test_long_spans_get_duplication_counts(index, corpus) -> None:
    path, tok, oracle = index
    tracer = open_tracer(TraceJob((str(path),), TraceParams(dup_min_len=20, dup_prefix_len=20)), "t")
    gen = "Intro: " + BOILER + " and then something else entirely qqq"
    out = tracer.trace("g", gen)
    ids = tok.encode(gen)
    long = [s for s in out.spans if s["length"] >= 20]
    assert long and len(out.counts) == len(long)
    for c in out.counts:
        s = next(s for s in long if s["span_id"] == c["span_id"])
        q = ids[s["start_tok"] + c["trim_start"]:s["end_tok"] - c["trim_end"]]
        assert c["whole_count"] == oracle.count(q) and c["first50_count"] == oracle.count(q[:20])


def test_empty_generation_gives_empty_result(index) -> None:
    path, _, _ = index
    tracer = open_tracer(TraceJob((str(path),), TraceParams()), "t")
    out = tracer.trace("g", "")
    assert out.spans == out.documents == out.counts == []


def _table_rows(lake: Lake, table: str) -> list[dict]:
    rows = lake.read(table).to_pylist()
    key = {"spans": "span_id", "span_documents": "span_document_id", "span_counts": "span_id"}[table]
    return sorted(rows, key=lambda r: r[key])


def test_outputs_identical_across_workers_and_threads(index, corpus, tmp_path) -> None:
    path, tok, _ = index
    gens = [(f"g{i:02d}", t) for i, t in enumerate(_inputs(corpus[1], tok))]
    results = []
    for workers, threads in ((1, 1), (2, 2)):
        lake = Lake(tmp_path / f"w{workers}")
        job = TraceJob((str(path),), TraceParams(seed=3), threads=threads)
        s = trace_generations(lake, job, list(reversed(gens)) if workers == 2 else gens, "file:x",
                              workers=workers, batch_size=3, progress=False)
        assert s.n_generations == len(gens) and s.n_skipped == 0
        results.append({t: _table_rows(lake, t) for t in ("spans", "span_documents", "span_counts")})
        # resuming skips every batch and writes nothing new
        again = trace_generations(lake, job, gens, "file:x", workers=1, batch_size=3, progress=False)
        assert again.n_skipped == again.n_batches
        assert len(lake.read("spans")) == len(results[-1]["spans"])
    assert results[0] == results[1]
    assert results[0]["span_documents"], "the inputs include verbatim text: documents must be found"
