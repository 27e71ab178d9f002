"""Texts to label: reference documents, a run's generations, corpus documents, or a JSONL file.

Why these four: the corpus gives members (its documents, cut to the tokens a scorer reads), held-out text
of the same domains gives non-members (the reference documents; on the sandbox they are files its corpus
did not use), a run's generations are what a model wrote (mostly non-members, some verbatim), and a file
brings anyone's own candidates. Every candidate keeps the (item_kind, item_id, text) that `text_scores`
keys a score by, so `lmaudit score` and `lmaudit mia-benchmark score` rows join the labels.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from ingest.errors import UserError
from ingest.lake import Lake

UNLABELLED = "unlabelled"  # the domain of a candidate whose source names none
CORPUS_MAX_TOKENS = 512  # a corpus document is cut to its first 512 index tokens: what the authors' scorer reads


@dataclass(frozen=True)
class Candidate:
    item_kind: str  # reference, generation, corpus_doc or text
    item_id: str
    text: str
    domain: str
    source: str  # reference, run:<R>, corpus, file:<name>: one lake partition each


def reference_candidates(lake: Lake) -> list[Candidate]:
    """Every reference document (held-out text of known domains), keyed as `lmaudit score --reference` keys it."""
    rows = lake.read("reference_docs").select(["ref_doc_id", "text", "domain"]).to_pylist()
    if not rows:
        raise UserError("no reference documents in the warehouse; run `lmaudit reference import` (or "
                        "`lmaudit sandbox reference`) first, or leave out --reference")
    return [Candidate("reference", r["ref_doc_id"], r["text"], r["domain"], "reference") for r in rows]


def run_candidates(lake: Lake, run_id: str) -> list[Candidate]:
    """A run's non-blank generations, keyed as `lmaudit score --run` keys them."""
    from ingest.score.run import run_items

    items = run_items(lake, run_id)
    if not items:
        raise UserError(f"run {run_id!r} has no generations with text; check `lmaudit sql \"select run_id from "
                        "stg_runs\"`")
    return [Candidate(kind, gid, text, UNLABELLED, f"run:{run_id}") for gid, kind, text in items]


def corpus_candidates(corpus, name: str, n: int, seed: int = 0,
                      max_tokens: int = CORPUS_MAX_TOKENS) -> list[Candidate]:
    """`n` documents of an open corpus (`ingest.corpora.OpenCorpus`) drawn with `seed`, each cut to its first
    `max_tokens` index tokens and decoded; the domain is the document's metadata `domain`."""
    engine = corpus.engine
    if n < 1:
        raise UserError(f"--from-corpus must be at least 1, not {n}")
    if max_tokens < 1:
        raise UserError(f"--max-tokens must be at least 1, not {max_tokens}")
    picks = sorted(random.Random(seed).sample(range(engine.n_docs), min(n, engine.n_docs)))
    out = []
    for ix in picks:
        doc = engine.doc(ix, max_len=max_tokens)
        text = corpus.tokenizer.decode(doc.tokens)
        domain = doc.metadata.get("domain") if isinstance(doc.metadata, dict) else None
        out.append(Candidate("corpus_doc", f"{name}:doc{ix}", text, str(domain) if domain else UNLABELLED, "corpus"))
    return out


def file_candidates(path: Path) -> list[Candidate]:
    """A JSONL file of candidates: `text` (a non-empty string) and `id` (unique) required, `domain` optional.
    Any bad row is one error naming the file and the row; nothing is returned then."""
    from ingest.jsonl import iter_json_objects

    if not path.is_file():
        raise UserError(f"--texts {path}: no such file; give a JSONL file with id and text per line")
    out, seen = [], {}
    for i, rec in iter_json_objects(path):
        text, item_id, domain = rec.get("text"), rec.get("id"), rec.get("domain", UNLABELLED)
        if not isinstance(text, str) or not text.strip():
            raise UserError(f"{path}, row {i}: no text (a non-empty string field 'text' is required)")
        if not isinstance(item_id, (str, int)) or isinstance(item_id, bool) or str(item_id) == "":
            raise UserError(f"{path}, row {i}: no id (a string or integer field 'id' is required)")
        if not isinstance(domain, str) or not domain:
            raise UserError(f"{path}, row {i}: 'domain' must be a non-empty string")
        item_id = str(item_id)
        if item_id in seen:
            raise UserError(f"{path}, row {i}: duplicate id {item_id!r} (first at row {seen[item_id]}); ids must "
                            "be unique")
        seen[item_id] = i
        out.append(Candidate("text", item_id, text, domain, f"file:{path.name}"))
    if not out:
        raise UserError(f"{path} holds no candidates; give one JSON object with id and text per line")
    return out
