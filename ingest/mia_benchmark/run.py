"""Label candidates into the lake (`mia_labels`) and score the labelled ones with `lmaudit score`'s scorer.

Why here and not in `lmaudit score`: reference documents and generations already have their scores' keys
(`lmaudit score --reference` / `--run` write them, and this module calls the same `score_items` with the
same sources, so the partitions are the same ones and nothing is scored twice); corpus documents and file
texts exist only in `mia_labels`, so they are scored from there, under their own source name.

Every candidate is gathered and checked before anything is written; the labels of one command land in one
transaction, one partition per (corpus, source), so labelling a source again replaces its rows.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from ingest.errors import UserError
from ingest.lake import Lake, make_key, partition_name, text_hash
from ingest.mia_benchmark.candidates import (
    CORPUS_MAX_TOKENS,
    Candidate,
    corpus_candidates,
    file_candidates,
    reference_candidates,
    run_candidates,
)
from ingest.mia_benchmark.labels import AMBIGUOUS, WINDOW, membership

TABLE = "mia_labels"


@dataclass(frozen=True)
class LabelRequest:
    """What `lmaudit mia-benchmark label` was asked to label."""

    corpus: str
    reference: bool = False
    runs: tuple[str, ...] = ()
    texts: tuple[Path, ...] = ()
    from_corpus: int = 0
    seed: int = 0
    max_tokens: int = CORPUS_MAX_TOKENS
    window: int = WINDOW


@dataclass
class LabelSummary:
    corpus: str
    counts: dict[str, Counter] = field(default_factory=dict)  # source -> label -> n

    def lines(self) -> list[str]:
        out = []
        for source, c in sorted(self.counts.items()):
            out.append(f"{self.corpus} / {source}: {c['member']} member, {c['non_member']} non_member, "
                       f"{c['ambiguous']} ambiguous (excluded)")
        return out


def gather(lake: Lake, req: LabelRequest, corpus) -> list[Candidate]:
    """Every candidate of the request (errors before anything is labelled or written)."""
    if req.window < 1:
        raise UserError(f"--window must be at least 1, not {req.window}")
    if not (req.reference or req.runs or req.texts or req.from_corpus):
        raise UserError("say what to label: --reference, --run R, --texts FILE and/or --from-corpus N")
    out: list[Candidate] = []
    if req.from_corpus:
        out += corpus_candidates(corpus, req.corpus, req.from_corpus, req.seed, req.max_tokens)
    if req.reference:
        out += reference_candidates(lake)
    for r in dict.fromkeys(req.runs):
        out += run_candidates(lake, r)
    names = [Path(p).name for p in req.texts]
    if len(set(names)) != len(names):
        raise UserError("two --texts files share a file name (the name is their source); rename one")
    for p in req.texts:
        out += file_candidates(Path(p))
    return out


def label_benchmark(lake: Lake, req: LabelRequest, progress: bool = True) -> LabelSummary:
    """Label every candidate of `req` against the corpus's index and write them, one partition per source."""
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn

    from ingest.progress import progress_bar

    from ingest.corpora import open_corpus

    if req.window < 1:
        raise UserError(f"--window must be at least 1, not {req.window}")
    corpus = open_corpus(lake, req.corpus)
    try:
        cands = gather(lake, req, corpus)
        ids = corpus.tokenizer.encode_batch([c.text for c in cands])
        params = json.dumps({"window": req.window, "seed": req.seed, "max_tokens": req.max_tokens,
                             "from_corpus": req.from_corpus}, sort_keys=True)
        now = datetime.now(timezone.utc)
        by_source: dict[str, list[dict]] = {}
        summary = LabelSummary(req.corpus)
        with progress_bar(TextColumn("[bold]label"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                          enabled=progress) as bar:
            task = bar.add_task("", total=len(cands))
            for c, toks in zip(cands, ids):
                m = membership(corpus.engine, [int(t) for t in toks], req.window)
                h = text_hash(c.text)
                by_source.setdefault(c.source, []).append({
                    "label_id": make_key(req.corpus, c.item_kind, c.item_id, h), "corpus": req.corpus,
                    "item_kind": c.item_kind, "item_id": c.item_id, "text_hash": h, "text": c.text,
                    "domain": c.domain, "source": c.source, "label": m.label, "reason": m.reason,
                    "n_tokens": m.n_tokens, "longest_match": m.longest_match, "n_windows": m.n_windows,
                    "n_windows_found": m.n_windows_found, "window_tokens": req.window, "params": params,
                    "created_at": now,
                })
                summary.counts.setdefault(c.source, Counter())[m.label] += 1
                bar.advance(task)
    finally:
        corpus.engine.close()
    with lake.transaction():
        for source, rows in by_source.items():
            lake.write(TABLE, partition_name("mia", req.corpus, source), rows,
                       meta={"corpus": req.corpus, "source": source})
    return summary


def labelled(lake: Lake, corpus: str) -> list[dict]:
    """The corpus's member and non-member rows (ambiguous ones are never scored)."""
    rows = [r for r in lake.read(TABLE).select(["corpus", "item_kind", "item_id", "text", "source", "label"])
            .to_pylist() if r["corpus"] == corpus and r["label"] != AMBIGUOUS]
    if not rows:
        raise UserError(f"no labelled members or non-members for corpus {corpus!r}; run `lmaudit mia-benchmark "
                        f"label --corpus {corpus} ...` first")
    return rows


def score_sources(lake: Lake, corpus: str) -> list[tuple[str, Sequence[tuple[str, str, str]]]]:
    """(source name, items) to score for the corpus's benchmark: reference documents and runs as `lmaudit
    score` names and lists them (same partitions), corpus documents and file texts under `mia:<corpus>:<source>`."""
    from ingest.score.run import reference_items, run_items

    rows = labelled(lake, corpus)
    out: list[tuple[str, Sequence[tuple[str, str, str]]]] = []
    sources = sorted({r["source"] for r in rows})
    for s in sources:
        if s == "reference":
            out.append(("reference", reference_items(lake)))
        elif s.startswith("run:"):
            out.append((s, run_items(lake, s[len("run:"):])))
        else:
            out.append((f"mia:{corpus}:{s}", [(r["item_id"], r["item_kind"], r["text"]) for r in rows
                                              if r["source"] == s]))
    return out


def scored_keys(lake: Lake, model: str, scoring: str) -> set[tuple[str, str, str]]:
    """(item_kind, item_id, text_hash) of every text `model` has a `text_scores` row for under `scoring`, from
    any command, chunking or reference model: a source whose items are all here is not scored again (scoring
    it under another partition prefix, e.g. without the `--ref-model` an earlier `lmaudit score` used, would
    write a second row with the same key)."""
    return set(scored_ref_models(lake, model, scoring))


def scored_ref_models(lake: Lake, model: str, scoring: str) -> dict[tuple[str, str, str], str | None]:
    """`scored_keys`, each with the reference model its row was scored with (None: without one). `model` as
    given to the command; rows of it under any spelling the marts read as it (`model_key` of what `lmaudit
    score` records, `stored_model`: relative inside the warehouse, absolute before) count."""
    import duckdb

    from ingest.home import model_key, stored_model

    if not lake.partitions("text_scores"):
        return {}
    ours = model_key(lake.home, stored_model(lake.home, model))
    glob = lake.glob("text_scores").replace("'", "''")  # a quote in the warehouse path (supported) stays text
    with duckdb.connect() as con:  # its own connection: the module-level default one may hold another result
        source = f"read_parquet('{glob}', union_by_name = true)"
        spellings = [m for (m,) in con.execute(f"select distinct model from {source}").fetchall()
                     if m is not None and model_key(lake.home, m) == ours]
        rows = con.execute(
            f"select item_kind, item_id, text_hash, ref_model, "
            f"coalesce(json_extract_string(params, '$.scoring'), 'lmaudit') "
            f"from {source} where list_contains(?, model)", [spellings]).fetchall()
    return {(k, i, h): ref for k, i, h, ref, sc in rows if sc == scoring}


def unscored_sources(lake: Lake, corpus: str, model: str, scoring: str, ref_model: str | None = None
                     ) -> tuple[list[tuple[str, Sequence[tuple[str, str, str]]]], list[str]]:
    """(`score_sources` still to score, names of the sources already scored in full).

    A source partly scored with another reference model (an interrupted run with another `--ref-model`) is
    refused: finishing it under this one would score its finished texts a second time, two rows with one key.
    """
    from ingest.home import model_key, stored_model

    def ref_key(ref: str | None) -> str | None:  # as `lmaudit score` records it and the marts read it
        return None if ref is None else model_key(lake.home, stored_model(lake.home, ref))

    have = scored_ref_models(lake, model, scoring)
    ours = ref_key(ref_model)
    todo, done = [], []
    for source, items in score_sources(lake, corpus):
        keys = [(kind, item_id, text_hash(text)) for item_id, kind, text in items]
        if all(k in have for k in keys):
            done.append(source)
            continue
        other = sorted({have[k] or "" for k in keys if k in have and ref_key(have[k]) != ours})
        if other:
            was = f"--ref-model {other[-1]}" if other[-1] else "no --ref-model"
            now = f"--ref-model {ref_model}" if ref_model else "no --ref-model"
            raise UserError(f"{source} is partly scored under {model} with {was} and this run has {now}; "
                            f"run it again with {was} to finish it (scores of one text under two reference "
                            "models would be two rows with one key)")
        todo.append((source, items))
    return todo, done
