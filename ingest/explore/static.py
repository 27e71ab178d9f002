"""`lmaudit explore --out DIR`: the explorer as static files (open DIR/index.html, or put DIR on any web server).

No server means no query per request, so the generations table is written as pages in a few fixed orders
(longest span, nv-recall, position) per run and for all runs; filters other than the run need `--serve`.
Each run's generations are written in bundles of BUNDLE (text, spans with their places, every span's documents), so a
generation page loads one bundle, and no file grows with the warehouse.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from ingest.explore.page import data_script, render_page
from ingest.explore.queries import HEADLINE, Explorer, GenQuery
from ingest.explore.spans import locate_spans, segments

STATIC_SORTS = {"longest_span": True, "nv_recall": True, "position": False}  # sort -> descending
BUNDLE = 200


@dataclass(frozen=True)
class StaticExport:
    index: Path
    n_generations: int
    n_files: int
    n_bytes: int
    seconds: float


def _write(path: Path, text: str) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = text.encode("utf-8")
    path.write_bytes(data)
    return len(data)


MARKER = ".lmaudit-explore"  # written into every folder the explorer exports to


def claim_folder(out: Path) -> None:
    """Export only into a new or empty folder, or one an earlier export wrote (it holds MARKER): a user's folder
    that happens to have a `data/` (or an `index.html`) is never deleted or overwritten."""
    from ingest.errors import UserError

    if out.exists() and not out.is_dir():
        raise UserError(f"{out} is a file; give a folder for the explorer's pages")
    if out.is_dir() and any(out.iterdir()) and not (out / MARKER).exists():
        raise UserError(f"{out} is not empty and was not written by `lmaudit explore`; give a new or empty folder "
                        "(nothing in it was changed)")
    out.mkdir(parents=True, exist_ok=True)
    (out / MARKER).write_text("pages written by lmaudit explore --out; a later export replaces data/ here\n")


def write_static(explorer: Explorer, out: Path, page_size: int = 100, progress=None) -> StaticExport:
    start = time.perf_counter()
    out = out.resolve()
    claim_folder(out)
    if (out / "data").exists():
        shutil.rmtree(out / "data")  # pages of an older export must not outlive it
    files = nbytes = 0

    def put(key: str, data) -> None:
        nonlocal files, nbytes
        nbytes += _write(out / "data" / f"{key}.js", data_script(key, data))
        files += 1

    runs = explorer.runs()
    put("runs", {"runs": runs, "facets": explorer.facets(), "headline": list(HEADLINE),
                 "static_sorts": list(STATIC_SORTS), "static_desc": {k: "1" if v else "0" for k, v in STATIC_SORTS.items()}})
    starts = {r["run_id"]: r["first"] for r in explorer._q(
        "select run_id, min(ordinal) as first from explore_generations group by run_id")}
    run_ix = {r["run_id"]: i for i, r in enumerate(runs)}

    def bundle(row: dict) -> str:
        return f"{run_ix[row['run_id']]}-{(row['ordinal'] - starts[row['run_id']]) // BUNDLE}"

    scopes = [("all", ())] + [(str(i), (r["run_id"],)) for i, r in enumerate(runs)]
    for name, run_ids in scopes:
        for sort, desc in STATIC_SORTS.items():
            page = 0
            while True:
                p = explorer.generations(GenQuery(run_ids=run_ids, sort=sort, descending=desc, page=page,
                                                  size=page_size))
                for r in p.rows:
                    r["bundle"] = bundle(r)
                put(f"pages/{name}/{sort}/{page}", {"rows": p.rows, "total": p.total, "page": page,
                                                    "size": page_size})
                page += 1
                if page * page_size >= p.total:
                    break
    n = 0
    for r in runs:
        n += _write_run_bundles(explorer, r["run_id"], put, bundle)
        if progress:
            progress(r["run_id"])
    index = out / "index.html"
    nbytes += _write(index, render_page("static", str(explorer.home), page_size))
    return StaticExport(index, n, files + 1, nbytes, time.perf_counter() - start)


def _write_run_bundles(explorer: Explorer, run_id: str, put, bundle) -> int:
    """Every generation of one run with its spans and documents, grouped into bundles by position."""
    from ingest.explore.queries import with_windows

    gens = explorer._q("""
        select summary.*, generations.text, prompts.text as prompt, prompts.true_continuation
        from explore_generations as summary
        inner join stg_generations as generations on summary.generation_id = generations.generation_id
        left join stg_prompts as prompts on generations.prompt_id = prompts.prompt_id
        where summary.run_id = ? order by summary.ordinal""", [run_id])
    if not gens:
        return 0
    spans = explorer._q("""
        with spans as (
            select spans.* from stg_spans as spans
            inner join explore_generations as summary
                on spans.generation_id = summary.generation_id and spans.trace_id = summary.trace_id
            where summary.run_id = ?
        ),
        docs as (
            select span_id, count(*) as n_docs, max(nv_recall) as best_nv_recall
            from stg_span_documents where span_id in (select span_id from spans) group by span_id
        )
        select spans.generation_id, spans.span_id, spans.start_tok, spans.end_tok, spans.length, spans.count,
               spans.unigram_logprob, spans.kept, spans.merged, spans.is_full, spans.text,
               coalesce(docs.n_docs, 0) as n_docs, docs.best_nv_recall, counts.first50_count, counts.whole_count
        from spans
        left join docs on spans.span_id = docs.span_id
        left join stg_span_counts as counts on spans.span_id = counts.span_id
        order by spans.generation_id, spans.start_tok, spans.end_tok""", [run_id])
    docs = explorer._q("""
        select docs.span_id, spans.text as span_text, docs.shard, docs.doc_ix, docs.doc_id, docs.source, docs.domain,
               docs.metadata, docs.window_text, docs.match_tier, docs.nv_recall, docs.nv_matched_words,
               docs.nv_generation_words, docs.nv_document_words
        from stg_span_documents as docs
        inner join stg_spans as spans on docs.span_id = spans.span_id
        inner join explore_generations as summary
            on spans.generation_id = summary.generation_id and spans.trace_id = summary.trace_id
        where summary.run_id = ?
        order by docs.span_id, docs.nv_recall desc nulls last, docs.shard, docs.doc_ix""", [run_id])
    by_gen: dict[str, list[dict]] = {}
    for s in spans:
        by_gen.setdefault(s.pop("generation_id"), []).append(s)
    by_span: dict[str, list[dict]] = {}
    for d in docs:
        by_span.setdefault(d.pop("span_id"), []).append(d)
    bundles: dict[str, dict] = {}
    for g in gens:
        ss = by_gen.get(g["generation_id"], [])
        placed = locate_spans(g["text"], ss)
        for s in ss:
            se = placed.get(s["span_id"])
            s["char_start"], s["char_end"] = (se if se else (None, None))
        g["spans"] = ss
        g["segments"] = segments(g["text"], placed)
        g["documents"] = {s["span_id"]: _columns(with_windows(by_span.get(s["span_id"], []))) for s in ss}
        bundles.setdefault(bundle(g), {})[g["generation_id"]] = g
    for b, content in bundles.items():
        put(f"gen/{b}", content)
    return len(gens)


def _columns(rows: list[dict]) -> dict:
    """Rows as {"c": column names, "r": value lists}: each name once per span instead of once per document
    (documents are most of an export); the page turns them back into objects."""
    cols = list(rows[0]) if rows else []
    return {"c": cols, "r": [[r[c] for c in cols] for r in rows]}
