"""SimpleTrace for one generation: spans, documents, tiers, nv-recall, duplication counts.

The steps follow spec/propme.md section 2. One `Tracer` holds an open index and the index tokenizer; it
is cheap to call from several threads (the engine releases the GIL during lookups). Output rows use the
lake's column names so the batch runner can write them as they are.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ingest.lake import make_key
from ingest.trace.matching import LookupStats, longest_matches, maximal_spans
from ingest.trace.normalize import normalize_document
from ingest.trace.nvrecall import FIXED_PARAMS, nv_recall
from ingest.trace.params import TraceParams

_SENTENCE_END = (".", "!", "?")


@dataclass
class TraceOutput:
    spans: list[dict[str, Any]] = field(default_factory=list)
    documents: list[dict[str, Any]] = field(default_factory=list)
    counts: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class _Span:
    start: int
    end: int
    score: float = 0.0
    count: int = 0
    kept: bool = False
    merged: bool = False
    is_full: bool = False

    @property
    def length(self) -> int:
        return self.end - self.start


def rng_for(seed: int, text: str) -> random.Random:
    """The document-sampling RNG of one generation: depends on the seed and the text only."""
    digest = hashlib.blake2b(f"{seed}\x1f{text}".encode(), digest_size=8).digest()
    return random.Random(int.from_bytes(digest, "little"))


class Tracer:
    def __init__(self, engine, tokenizer, logprobs: np.ndarray, floor: float, params: TraceParams,
                 trace_id: str):
        self.engine, self.tok, self.p, self.trace_id = engine, tokenizer, params, trace_id
        self.logprobs = np.asarray(logprobs, dtype=np.float64)
        self.floor = float(floor)
        self._piece_cache: dict[int, str] = {}
        self.stats = LookupStats()

    # -- token text helpers ---------------------------------------------------------------------
    def _piece(self, t: int) -> str:
        s = self._piece_cache.get(t)
        if s is None:
            s = self.tok.decode([t])
            self._piece_cache[t] = s
        return s

    def _joins_word(self, left: int, right: int) -> bool:
        """True when the boundary between tokens `left` and `right` falls inside a word."""
        a, b = self._piece(left), self._piece(right)
        return bool(a) and bool(b) and a[-1].isalnum() and b[0].isalnum()

    def _score(self, ids: Sequence[int]) -> float:
        lp = self.logprobs
        return float(sum(lp[t] if t < len(lp) else self.floor for t in ids))

    # -- span filters ---------------------------------------------------------------------------
    def _filter(self, ids: list[int], spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
        p = self.p
        out = []
        L = len(ids)
        for b, e in spans:
            if p.mode == "text":
                while b < e and b > 0 and self._joins_word(ids[b - 1], ids[b]):
                    b += 1
                while e > b and e < L and self._joins_word(ids[e - 1], ids[e]):
                    e -= 1
                for i in range(b, e):
                    piece = self._piece(ids[i])
                    if piece.rstrip().endswith(_SENTENCE_END) and i + 1 < e:
                        e = i + 1
                        break
            if e - b < p.min_span_len:
                continue
            if not self.tok.decode(ids[b:e]).strip():
                continue
            out.append((b, e))
        # keep maximal spans only (trimming in text mode can nest spans)
        out = sorted(set(out), key=lambda s: (s[0], -s[1]))
        maximal, max_end = [], -1
        for b, e in out:
            if e > max_end:
                maximal.append((b, e))
                max_end = e
        return maximal

    # -- documents ------------------------------------------------------------------------------
    def _pick_ranks(self, segs: list[tuple[int, int]], cnt: int, k: int, rng: random.Random | None) -> list[tuple[int, int]]:
        """k occurrences: all when there are at most k, else evenly spaced (rng None) or sampled."""
        if cnt <= k:
            idx = list(range(cnt))
        elif rng is None:
            idx = [i * cnt // k for i in range(k)]
        else:
            idx = sorted(rng.sample(range(cnt), k))
        out, base, si = [], 0, 0
        bounds = []
        for s, (lo, hi) in enumerate(segs):
            bounds.append((base, base + hi - lo, s, lo))
            base += hi - lo
        for i in idx:
            while not (bounds[si][0] <= i < bounds[si][1]):
                si += 1
            b0, _, s, lo = bounds[si]
            out.append((s, lo + i - b0))
        return out

    def _documents(self, span: _Span, ids: list[int], text: str, span_id: str, rng: random.Random | None,
                   only_full_normalized: bool = False) -> list[dict[str, Any]]:
        p, L = self.p, len(ids)
        q = ids[span.start:span.end]
        res = self.engine.find(q)
        span.count = res["cnt"]
        if res["cnt"] == 0:
            return []
        ranks = self._pick_ranks(res["segment_by_shard"], res["cnt"], p.max_docs, rng)
        ctx = (p.window_factor - 1) * L // 2
        docs = self.engine.docs_by_ranks(ranks, needle_len=len(q), max_ctx_len=ctx)
        norm_gen = normalize_document(text)
        rows, seen = [], set()
        for d in docs:
            if (d.shard, d.doc_ix) in seen:
                continue
            seen.add((d.shard, d.doc_ix))
            window = self.tok.decode(d.tokens)
            if text and text in window:
                tier = "exact_full_raw"
            elif norm_gen and norm_gen in normalize_document(window):
                tier = "exact_full_normalized"
            else:
                tier = "partial"
            if only_full_normalized and tier == "partial":
                continue
            nv = nv_recall(text, window, FIXED_PARAMS if p.nv_variant == "fixed" else None)
            meta = d.metadata or {}
            rows.append({
                "span_document_id": make_key(span_id, d.shard, d.doc_ix), "span_id": span_id, "shard": d.shard,
                "doc_ix": d.doc_ix, "doc_id": None if meta.get("id") is None else str(meta.get("id")),
                "source": None if meta.get("source") is None else str(meta.get("source")),
                "domain": None if meta.get("domain") is None else str(meta.get("domain")),
                "metadata": _json(meta, d.path, d.linenum), "window_text": window, "match_tier": tier,
                "nv_recall": nv.recall, "nv_matched_words": nv.matched_words,
                "nv_generation_words": nv.generation_words, "nv_document_words": nv.document_words,
            })
        return rows

    # -- duplication ----------------------------------------------------------------------------
    def _dup_counts(self, span: _Span, ids: list[int], span_id: str) -> dict[str, Any]:
        p = self.p
        b, e = span.start, span.end
        trim_b = trim_e = 0
        while trim_b < p.max_trim and b > 0 and b < e and self._joins_word(ids[b - 1], ids[b]):
            b += 1
            trim_b += 1
        while trim_e < p.max_trim and e < len(ids) and e > b and self._joins_word(ids[e - 1], ids[e]):
            e -= 1
            trim_e += 1
        q = ids[b:e]
        return {"span_id": span_id, "first50_count": self.engine.count(q[:p.dup_prefix_len]) if q else None,
                "whole_count": self.engine.count(q) if q else None, "trim_start": trim_b, "trim_end": trim_e}

    # -- the whole trace ------------------------------------------------------------------------
    def trace(self, generation_id: str, text: str) -> TraceOutput:
        out = TraceOutput()
        ids = self.tok.encode(text)
        L = len(ids)
        if L == 0:
            return out
        p = self.p
        rng = rng_for(p.seed, text)
        sid = lambda s: make_key(self.trace_id, generation_id, s.start, s.end)  # noqa: E731

        spans: list[_Span] = []
        full = None
        if self.engine.count(ids) > 0:  # step 1: full match
            full = _Span(0, L, self._score(ids), kept=True, is_full=True)
            out.documents += self._documents(full, ids, text, sid(full), None)
            spans.append(full)

        n = longest_matches(self.engine, ids, self.stats)  # step 2
        for b, e in self._filter(ids, maximal_spans(n)):    # steps 3-4
            if full is not None and (b, e) == (0, L):
                continue
            spans.append(_Span(b, e, self._score(ids[b:e])))
        partial = [s for s in spans if not s.is_full]

        k = p.n_rare(L)  # step 5: the K rarest spans
        rare = sorted(partial, key=lambda s: (s.score, s.start))[:k]
        for s in rare:
            s.kept = True

        # step 7: merge overlapping kept spans whose union occurs
        kept = sorted(rare, key=lambda s: s.start)
        merged: list[_Span] = []
        for s in kept:
            if (merged and s.start < merged[-1].end and (merged[-1].start, s.end) != (0, L)
                    and self.engine.count(ids[merged[-1].start:s.end]) > 0):
                prev = merged[-1]
                union = _Span(prev.start, s.end, self._score(ids[prev.start:s.end]), kept=True, merged=True)
                prev.kept = s.kept = False
                merged[-1] = union
                spans.append(union)
            else:
                merged.append(s)
        for s in merged:  # step 6: documents of the kept spans
            out.documents += self._documents(s, ids, text, sid(s), rng)

        if full is None:  # step 8: anchors for documents holding the normalized generation
            anchors = sorted(partial, key=lambda s: (-s.length, s.score, s.start))[:p.n_anchors]
            have = {(d["span_id"], d["shard"], d["doc_ix"]) for d in out.documents}
            for a in anchors:
                for d in self._documents(a, ids, text, sid(a), rng, only_full_normalized=True):
                    if (d["span_id"], d["shard"], d["doc_ix"]) not in have:
                        out.documents.append(d)

        for s in spans:
            if not s.count:
                s.count = self.engine.count(ids[s.start:s.end])
            span_id = sid(s)
            out.spans.append({
                "span_id": span_id, "trace_id": self.trace_id, "generation_id": generation_id,
                "start_tok": s.start, "end_tok": s.end, "length": s.length, "count": s.count,
                "unigram_logprob": s.score, "kept": s.kept, "merged": s.merged, "is_full": s.is_full,
                "text": self.tok.decode(ids[s.start:s.end]),
            })
            if s.length >= p.dup_min_len:  # step 9
                out.counts.append(self._dup_counts(s, ids, span_id))
        return out


def _json(meta: dict, path: str | None, linenum: int | None) -> str:
    import json

    return json.dumps({**meta, "_path": path, "_linenum": linenum}, sort_keys=True, default=str)
