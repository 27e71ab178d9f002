"""Build the `specific` prompt set from candidate source documents, and measure how close it is.

`build_specific_prompts` runs the steps of the package docstring and writes two things: the prompt set
(`prompts`, setting `specific`: kept prompts, and the candidates the leakage filter dropped, with the
reason) and the closeness rows (`prompt_closeness`): every compared item's cosine similarity to its nearest
document of an independent training sample, for four groups: the generic sentences, the candidates before
selection, the selected specific prompts, and real training sentences of the same lengths.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ingest.errors import UserError
from ingest.prompts.specific import candidates as C
from ingest.prompts.specific.embedders import EMBEDDERS, nearest_similarity
from ingest.prompts.specific.quality import QUALITY_SCORERS
from ingest.prompts.specific.select import length_adjusted, select
from ingest.prompts.specific.training_sample import doc_texts, sample_doc_indices

GROUPS = ("generic", "candidate", "specific", "training_sentence")


@dataclass(frozen=True)
class SpecificRequest:
    candidates: Path
    match_file: Path
    n: int = 1000
    lang: str = "en"
    seed: int = 0
    per_source: int = 4000
    source_field: str = "source"
    quality: str = "heuristic"
    quality_params: dict = field(default_factory=dict)
    min_quality: float = 3.0
    length_draws: int = 5
    embedder: str = "lsa"
    embedder_params: dict = field(default_factory=dict)
    n_training_docs: int = 10_000
    selection_seed: int = 43
    evaluation_seed: int = 42
    doc_tokens: int = 512
    check_leakage: bool = True

    def fingerprint(self) -> str:
        d = {k: v for k, v in self.__dict__.items() if k not in ("candidates", "match_file")}
        d["candidates"] = hashlib.sha256(Path(self.candidates).read_bytes()).hexdigest()
        d["match_file"] = hashlib.sha256(Path(self.match_file).read_bytes()).hexdigest()
        return json.dumps(d, sort_keys=True, default=str)


@dataclass
class SpecificResult:
    prompt_set: str
    kept: int
    dropped: Counter
    notes: list[str]
    closeness: dict[str, float]  # group -> mean nearest-document similarity


def _is_language(lang: str):
    from ingest.prompts.sentences import looks_like

    return lambda s: C.function_word_share(s, lang) >= 0.1 and looks_like(s, lang)


def _generic_sentences(req: SpecificRequest) -> list[str]:
    """The generic set as `prompts build --setting generic --file F --n N --seed S` samples it."""
    from ingest.prompts.sentences import read_sentences

    texts = read_sentences(req.match_file, req.lang).sentences
    return random.Random(req.seed).sample(texts, min(req.n, len(texts)))


def _candidates(corpus, req: SpecificRequest, generic_lens: list[int], counts: Counter, step) -> list[C.Candidate]:
    docs = C.sample_per_source(C.read_candidate_docs(req.candidates, req.source_field), req.per_source, req.seed)
    counts["documents read"] = len(docs)
    scorer = QUALITY_SCORERS.create(req.quality, **req.quality_params)
    scores = step("quality", lambda: scorer.score([d.text for d in docs]))
    good = [d for d, q in zip(docs, scores) if q >= req.min_quality]
    counts[f"documents below quality {req.min_quality:g}"] = len(docs) - len(good)
    rng = random.Random(req.seed)
    is_lang = _is_language(req.lang)
    out, seen = [], set()
    for d in good:
        targets = [rng.choice(generic_lens) for _ in range(req.length_draws)]
        cand = C.pick_sentence(d, targets, corpus.tokenizer.encode, is_lang, rng)
        if cand is None:
            counts["documents without a length-matched sentence"] += 1
        elif cand.text in seen:
            counts["duplicate sentences"] += 1
        else:
            seen.add(cand.text)
            out.append(cand)
    return out


def _training_sentences(corpus, req: SpecificRequest, generic_lens: list[int], exclude: set[int]) -> list[C.Candidate]:
    """Real training sentences of generic lengths, one per training document outside the evaluation sample."""
    rng = random.Random(req.evaluation_seed + 1)
    out, seen = [], set()
    n_docs = corpus.engine.n_docs
    ix = sample_doc_indices(n_docs, min(n_docs, max(20 * len(generic_lens), 1000)), req.evaluation_seed + 1, exclude)
    rng.shuffle(ix)
    is_lang = _is_language(req.lang)
    for i in ix:
        if len(out) >= len(generic_lens):
            break
        text = doc_texts(corpus, [i], 4 * req.doc_tokens)[0]
        c = C.pick_sentence(C.CandidateDoc(f"doc:{i}", "training", text),
                            [rng.choice(generic_lens) for _ in range(req.length_draws)],
                            corpus.tokenizer.encode, is_lang, rng)
        if c is not None and c.text not in seen:
            seen.add(c.text)
            out.append(c)
    return out


def build_specific_prompts(lake, corpus_name: str, req: SpecificRequest, progress: bool = True) -> SpecificResult:
    from rich.console import Console

    from ingest.corpora import open_corpus
    from ingest.lake import make_key, partition_name
    from ingest.prompts import settings as S
    from ingest.prompts.settings import PromptSet

    if req.n < 1:
        raise UserError("--n must be at least 1")
    console = Console(stderr=True, quiet=not progress)

    def step(name: str, fn):
        with console.status(f"specific prompts: {name}"):
            return fn()

    corpus = open_corpus(lake, corpus_name)
    generic = _generic_sentences(req)
    generic_lens = [len(corpus.tokenizer.encode(s)) for s in generic]
    counts: Counter = Counter()
    cands = _candidates(corpus, req, generic_lens, counts, step)
    leaked: list[tuple[C.Candidate, str]] = []
    if req.check_leakage:
        reasons = [S.leakage_reason(corpus, c.text) for c in S.track(cands, "specific: leakage filter", progress)]
        leaked = [(c, r) for c, r in zip(cands, reasons) if r]
        cands = [c for c, r in zip(cands, reasons) if not r]
        generic = [s for s in S.track(generic, "generic: leakage filter", progress) if not S.leakage_reason(corpus, s)]
    if not cands:
        raise UserError(f"{req.candidates}: no candidate sentence survived the filters ({_describe(counts, leaked)}); "
                        "add documents or lower --min-quality")

    n_docs = corpus.engine.n_docs
    sel_ix = sample_doc_indices(n_docs, req.n_training_docs, req.selection_seed)
    eval_ix = sample_doc_indices(n_docs, req.n_training_docs, req.evaluation_seed, exclude=set(sel_ix))
    sel_texts = step("training sample", lambda: doc_texts(corpus, sel_ix, req.doc_tokens))
    emb = EMBEDDERS.create(req.embedder, **req.embedder_params)
    step("fit embedder", lambda: emb.fit(sel_texts))
    sel_ref = step("embed training sample", lambda: emb.embed(sel_texts))
    cand_vec = step("embed candidates", lambda: emb.embed([c.text for c in cands]))
    scores = length_adjusted(nearest_similarity(cand_vec, sel_ref), [c.n_tokens for c in cands])
    chosen = set(select([c.source for c in cands], scores, req.n))

    prompt_set = make_key(corpus.corpus_id, "specific", req.fingerprint())
    rows = [S.prompt_row(corpus, "specific", ("selected", c.doc_id, c.text), c.text, corpus.tokenizer.encode(c.text),
                   language=req.lang, source=c.source, source_doc=c.doc_id, leakage_outcome="kept")
            for i, c in enumerate(cands) if i in chosen]
    rows += [S.prompt_row(corpus, "specific", ("leaked", c.doc_id, c.text), c.text, corpus.tokenizer.encode(c.text),
                    language=req.lang, source=c.source, source_doc=c.doc_id, leakage_outcome="dropped",
                    leakage_reason=r) for c, r in leaked]
    ps = PromptSet("specific", rows, Counter(r for _, r in leaked)).stamp(prompt_set)

    eval_texts = step("evaluation sample", lambda: doc_texts(corpus, eval_ix, req.doc_tokens))
    eval_ref = step("embed evaluation sample", lambda: emb.embed(eval_texts))
    training = step("training sentences", lambda: _training_sentences(corpus, req, generic_lens,
                                                                     set(eval_ix) | set(sel_ix)))
    groups: list[tuple[str, list[tuple[str, str, str, int]], np.ndarray | None]] = [
        ("generic", [(f"generic:{i}", "generic", s, len(corpus.tokenizer.encode(s))) for i, s in enumerate(generic)], None),
        ("candidate", [(c.doc_id, c.source, c.text, c.n_tokens) for c in cands], scores),
        ("specific", [(c.doc_id, c.source, c.text, c.n_tokens) for i, c in enumerate(cands) if i in chosen],
         np.array([scores[i] for i in sorted(chosen)])),
        ("training_sentence", [(c.doc_id, c.source, c.text, c.n_tokens) for c in training], None),
    ]
    embedder_desc = json.dumps({"name": req.embedder, **req.embedder_params}, sort_keys=True)
    close_rows: list[dict[str, Any]] = []
    means: dict[str, float] = {}
    for group, items, sel_scores in groups:
        if not items:
            continue
        sims = step(f"closeness: {group}", lambda items=items: nearest_similarity(emb.embed([t for _, _, t, _ in items]), eval_ref))
        means[group] = float(np.mean(sims))
        for k, ((item_id, source, text, n_tok), sim) in enumerate(zip(items, sims)):
            close_rows.append({
                "closeness_id": make_key(prompt_set, group, item_id, text), "prompt_set": prompt_set,
                "corpus_id": corpus.corpus_id, "item_group": group, "item_id": item_id, "source": source, "text": text,
                "n_tokens": int(n_tok), "similarity": float(sim),
                "selection_score": None if sel_scores is None else float(sel_scores[k]),
                "embedder": embedder_desc, "n_reference_docs": len(eval_ix), "reference_seed": req.evaluation_seed,
                "created_at": None,
            })
    from datetime import datetime, timezone

    now = datetime.now(timezone.utc)
    for r in close_rows:
        r["created_at"] = now
    part = partition_name("set", corpus_name, "specific", prompt_set[:12])
    with lake.transaction() as tx:
        tx.write("prompts", part, ps.rows)
        tx.write("prompt_closeness", part, close_rows)
    notes = [f"{k}: {v}" for k, v in counts.items() if v] + [
        f"{len(cands)} candidates after the leakage filter, {len(chosen)} selected from "
        f"{len({c.source for c in cands})} sources"]
    return SpecificResult(prompt_set, len(ps.kept), ps.dropped, notes, means)


def _describe(counts: Counter, leaked: list) -> str:
    parts = [f"{v} {k}" for k, v in counts.items() if v]
    if leaked:
        parts.append(f"{len(leaked)} found in the training corpus")
    return ", ".join(parts) or "nothing read"
