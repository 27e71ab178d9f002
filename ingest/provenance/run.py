"""`lmaudit provenance`: the licence and metadata of every training document a generation reproduces, and the
personal data in the reproduced spans, written to the lake for the marts (docs/provenance.md).

What is read: spans of at least `min_span` index tokens (default: the dbt var `propme_mid_span_tokens` of
dbt_project.yml, the length the marts call a reproduction) of the generations of every tracing pass (not the
traces of prompts, `trace --prompts`: they are chance levels, not reproductions), and the documents retrieved
for them. A document's whole text is read back from the index its pass traced against (the lake keeps only
a window around the match) and decoded with the index's tokenizer; its licence is detected in that text.

Resumable and idempotent: a document already in `document_provenance` (same corpus, same doc_ix) and a span
already in `personal_data_scans` are skipped, so running again after new runs were traced reads only the new
ones, and running twice writes nothing the second time. Rows are written in batches, each batch in one lake
transaction (scans with their findings), so a killed step keeps its finished batches and never a half batch.
`rescan=True` first removes every row of the three tables (new detector versions), then reads everything.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from ingest.errors import UserError
from ingest.home import from_stored
from ingest.lake import Lake, make_key, partition_name, text_hash

TABLES = ("document_provenance", "personal_data_scans", "personal_data_findings")
DOC_BATCH = 500
SPAN_BATCH = 5000


@dataclass(frozen=True)
class ProvenanceSummary:
    min_span: int
    n_documents: int          # documents read in this call
    n_documents_skipped: int  # already in the lake
    n_with_licence: int       # of those read: a licence found in the text or the metadata
    n_spans: int              # spans scanned in this call
    n_spans_skipped: int
    findings: dict[str, int]  # kind -> findings in this call
    seconds: float


def default_min_span() -> int:
    """The marts' reproduction length (var propme_mid_span_tokens of dbt_project.yml): one definition."""
    import yaml

    from ingest.home import project_dir

    return int(yaml.safe_load((project_dir() / "dbt_project.yml").read_text())["vars"]["propme_mid_span_tokens"])


def _connect(lake: Lake):
    import duckdb

    con = duckdb.connect()
    for t in ("spans", "span_documents", "trace_runs", "generations", *TABLES):
        path = lake.glob(t).replace("'", "''")
        con.execute(f"create view {t} as select * from read_parquet('{path}', union_by_name = true)")
    return con


def _todo_documents(con, min_span: int, everything: bool = False) -> tuple[list[tuple], int]:
    """[(corpus_key, corpus_id, index_dir, doc_ix, shard)] not yet read (every one with `everything`), and how
    many were read already."""
    rows = con.execute("""
        with reproduced as (
            select distinct coalesce(tr.corpus_id, tr.index_dir) as corpus_key, tr.corpus_id, tr.index_dir,
                   sd.doc_ix, sd.shard
            from span_documents sd
            join spans s on sd.span_id = s.span_id
            join trace_runs tr on s.trace_id = tr.trace_id
            where s.length >= ? and s.generation_id in (select generation_id from generations)
        )
        select r.*, p.provenance_id is not null as done
        from reproduced r
        left join (select distinct provenance_id, corpus_key, doc_ix from document_provenance) p
            on r.corpus_key = p.corpus_key and r.doc_ix = p.doc_ix
        order by r.corpus_key, r.doc_ix
    """, [min_span]).fetchall()
    # a document retrieved by two passes of one corpus with different index folders is read once
    todo: dict[tuple, tuple] = {}
    done = 0
    for key, corpus_id, index_dir, doc_ix, shard, is_done in rows:
        if is_done and not everything:
            done += 1
        else:
            todo.setdefault((key, doc_ix), (key, corpus_id, index_dir, doc_ix, shard))
    return list(todo.values()), done


_SPANS_TODO = """
    select s.span_id, s.trace_id, s.generation_id, s.text
    from spans s
    where s.length >= ? and s.generation_id in (select generation_id from generations)
      and s.span_id not in (select span_id from scanned)
    order by s.span_id
"""


def _count_spans(con, min_span: int) -> tuple[int, int]:
    """(spans to scan, spans scanned before). The scanned ids are copied into a temporary table first: the
    scan streams its input while it writes new scan partitions, which must not change what it reads."""
    con.execute("create or replace temp table scanned as select distinct span_id from personal_data_scans")
    todo, done = con.execute("""
        select count(*) filter (where s.span_id not in (select span_id from scanned)),
               count(*) filter (where s.span_id in (select span_id from scanned))
        from spans s
        where s.length >= ? and s.generation_id in (select generation_id from generations)
    """, [min_span]).fetchone()
    return int(todo), int(done)


def _index_dirs(index_dir: str | None, home: Path) -> list[str]:
    """A trace pass's index folders, absolute: one inside the warehouse is recorded relative to it."""
    try:
        dirs = json.loads(index_dir or "[]")
    except ValueError:
        dirs = [index_dir]
    dirs = [str(d) for d in dirs] if isinstance(dirs, list) else [str(dirs)]
    return [str(from_stored(home, d)) for d in dirs]


def check_indexes(todo: Sequence[tuple], home: Path, passes: dict[str, list[tuple[str, str]]] | None = None,
                  seen: Callable[[str], Sequence[tuple[int, str]]] | None = None) -> dict[str, list[str]]:
    """Each traced index folder list (`trace_runs.index_dir`) as the absolute folders to read, before anything
    is written: one line naming an index that can no longer be opened, or that is not the one traced.

    `passes` maps an `index_dir` to its passes' (trace_id, params): a pass's id is its indexes' content
    (`TraceJob.trace_id`), so the folders read are those whose manifests give that id. A folder recorded
    absolute before paths were relative (another warehouse's, before this one was moved or copied) is looked
    for at the same place in this warehouse first (`corpora.moved_into`); the recorded folder is read only if it
    still holds the traced index (it may hold another by now: the original warehouse rebuilt). A pass named
    the old way (`legacy_trace_id`, the manifest's raw bytes) whose manifest was written again (the same folder
    attached again) cannot be recomputed: its folders are read if the documents there have the ids the pass
    recorded (`seen(index_dir)`: [(doc_ix, doc_id)] from span_documents), refused if one differs."""
    from ingest.corpora import moved_into
    from ingest.index.manifest import IndexManifest

    found: dict[str, list[str]] = {}
    for index_dir in sorted({t[2] for t in todo if t[2]}):
        dirs = _index_dirs(index_dir, home)
        moved = [moved_into(home, d) for d in dirs]
        ids = (passes or {}).get(index_dir)
        for candidate in ([moved] if moved != dirs else []) + [dirs]:
            if all(IndexManifest.path_in(d).is_file() for d in candidate) and (
                    ids is None or _traced(candidate, ids)
                    or (seen is not None and _same_documents(candidate, seen(index_dir)) is not False)):
                found[index_dir] = candidate
                break
        else:
            for d in dirs:
                if not IndexManifest.path_in(d).exists():
                    raise UserError(
                        f"the index {d} that generations were traced against is gone or has no manifest; "
                        "provenance reads each reproduced document's whole text from it: restore or "
                        "re-attach it (`lmaudit index attach`) where it was, or, in a moved warehouse, run "
                        "the same `lmaudit trace` again (nothing is traced twice: it records where the "
                        "index is now), then run again")
            traces = ", ".join(sorted(t[:12] for t, _ in ids or []))
            raise UserError(f"the index in {', '.join(dirs)} is not the one generations were traced against (trace "
                            f"{traces}; it was rebuilt, or this warehouse was copied and that folder now holds "
                            "another): provenance would read other documents; restore the traced index there, "
                            "then run again")
    return found


def _traced(dirs: list[str], ids: list[tuple[str, str]]) -> bool:
    """Whether the manifests in `dirs` are those of a pass in `ids` [(trace_id, params)]: its id is computed
    from them as `TraceJob.trace_id` (or `legacy_trace_id`, the raw bytes) computes it."""
    import hashlib

    from ingest.index.manifest import IndexManifest
    from ingest.trace.run import manifest_identity

    raw = [IndexManifest.path_in(d).read_bytes() for d in dirs]
    identity = "\n".join(json.dumps(manifest_identity(json.loads(b)), sort_keys=True) for b in raw)
    digests = (hashlib.sha256(identity.encode()).hexdigest(), hashlib.sha256(b"".join(raw)).hexdigest())
    return any(trace_id in {make_key(h, params) for h in digests} for trace_id, params in ids)


def _same_documents(dirs: list[str], sample: Sequence[tuple[int, str]]) -> bool | None:
    """Whether the documents at `sample`'s doc_ix in the index `dirs` have the doc ids a pass recorded for
    them; None when none of them has an id to compare."""
    from ingest.index.engine import IndexEngine

    ids = [(ix, doc_id) for ix, doc_id in sample if doc_id is not None]
    if not ids:
        return None
    engine = IndexEngine(dirs)
    try:
        for ix, doc_id in ids:
            if ix >= engine.n_docs:
                return False
            meta = engine.doc(int(ix), max_len=1).metadata or {}
            if meta.get("id") is None or str(meta["id"]) != doc_id:
                return False
    finally:
        engine.close()
    return True


def document_row(corpus_key: str, corpus_id: str | None, index_dir: str | None, record, text: str,
                 detector: str, now: datetime) -> dict:
    """The `document_provenance` row of one document read from the index (`record`: an engine DocRecord)."""
    from ingest.provenance.licences import detect_licence, normalize_expression
    from ingest.provenance.metadata import document_metadata

    meta = dict(record.metadata or {})
    md = document_metadata(meta)
    found = detect_licence(text)
    return {
        "provenance_id": make_key(corpus_key, record.doc_ix), "corpus_key": corpus_key, "corpus_id": corpus_id,
        "index_dir": index_dir, "shard": record.shard, "doc_ix": record.doc_ix,
        "doc_id": None if meta.get("id") is None else str(meta.get("id")),
        "doc_tokens": record.doc_len, "doc_chars": len(text), "text_hash": text_hash(text),
        "source": md.source, "path": md.path, "url": md.url, "repository": md.repository,
        "licence_declared": md.licence, "licence_declared_spdx": normalize_expression(md.licence),
        "licence_detected": found.expression, "licence_ids": list(found.ids), "licence_evidence": found.evidence,
        "licence_coverage": found.coverage, "licence_text_truncated": found.truncated,
        "metadata": json.dumps({**meta, "_path": record.path, "_linenum": record.linenum}, sort_keys=True,
                               default=str),
        "detector": detector, "created_at": now,
    }


def _read_documents(lake: Lake, todo: Sequence[tuple], folders: dict[str, list[str]], bar, task) -> int:
    from ingest.index.engine import IndexEngine
    from ingest.index.tokenizer import load_tokenizer
    from ingest.provenance.licences import versions

    detector = versions()
    with_licence = 0
    groups: dict[tuple[str, str | None, str | None], list[tuple[int, int]]] = {}
    for key, corpus_id, index_dir, doc_ix, shard in todo:
        groups.setdefault((key, corpus_id, index_dir), []).append((doc_ix, shard))
    for (key, corpus_id, index_dir), docs in groups.items():
        dirs = folders[index_dir] if index_dir in folders else _index_dirs(index_dir, lake.home)
        engine = IndexEngine(dirs)
        try:
            tok = load_tokenizer(engine.manifest.tokenizer_spec(dirs[0]))
            for i in range(0, len(docs), DOC_BATCH):
                batch = docs[i:i + DOC_BATCH]
                now = datetime.now(timezone.utc)
                rows = []
                for doc_ix, _shard in batch:
                    rec = engine.doc(int(doc_ix))
                    rows.append(document_row(key, corpus_id, index_dir, rec, tok.decode(rec.tokens), detector, now))
                with_licence += sum(1 for r in rows if r["licence_detected"] or r["licence_declared_spdx"])
                name = partition_name("prov", make_key(key)[:16], make_key(*[r["provenance_id"] for r in rows])[:16])
                lake.write("document_provenance", name, rows)
                bar.update(task, advance=len(batch))
        finally:
            engine.close()
    return with_licence


def _scan_spans(lake: Lake, cursor, bar, task) -> dict[str, int]:
    """Scan the spans `cursor` yields (span_id, trace_id, generation_id, text), SPAN_BATCH at a time: at paper
    scale millions of spans never sit in memory together."""
    from ingest.provenance.personal_data import DETECTORS, find_personal_data, versions

    detector = versions()
    counts = {k: 0 for k in DETECTORS.names()}
    while batch := cursor.fetchmany(SPAN_BATCH):
        now = datetime.now(timezone.utc)
        scans, findings = [], []
        for span_id, trace_id, generation_id, text in batch:
            found = find_personal_data(text or "")
            scans.append({"scan_id": make_key(span_id), "span_id": span_id, "trace_id": trace_id,
                          "generation_id": generation_id, "n_findings": len(found), "detector": detector,
                          "created_at": now})
            for f in found:
                counts[f.kind] = counts.get(f.kind, 0) + 1
                findings.append({"finding_id": make_key(span_id, f.kind, f.start), "span_id": span_id,
                                 "trace_id": trace_id, "generation_id": generation_id, "kind": f.kind,
                                 "subtype": f.subtype, "start_char": f.start, "end_char": f.end,
                                 "masked": f.masked, "value_hash": f.value_hash, "created_at": now})
        name = partition_name("pd", make_key(*[s["span_id"] for s in scans])[:16])
        with lake.transaction():  # a batch's scans and findings appear together or not at all
            lake.write("personal_data_findings", name, findings)
            lake.write("personal_data_scans", name, scans)
        bar.update(task, advance=len(batch))
    return counts


def run_provenance(lake: Lake, min_span: int | None = None, rescan: bool = False,
                   progress: bool = True) -> ProvenanceSummary:
    """Read the licence and metadata of every newly reproduced document and scan every new reproduced span."""
    t0 = time.perf_counter()
    if min_span is None:
        min_span = default_min_span()
    if min_span < 1:
        raise UserError(f"--min-span must be at least 1 token, got {min_span}")
    lake.init()
    con = _connect(lake)
    try:
        docs, docs_done = _todo_documents(con, min_span, everything=rescan)
        passes: dict[str, list[tuple[str, str]]] = {}
        for index_dir, trace_id, params in con.execute("select index_dir, trace_id, params from trace_runs").fetchall():
            passes.setdefault(index_dir, []).append((trace_id, params))
        def seen(index_dir: str) -> list[tuple[int, str]]:  # a few documents of its passes, with their ids
            return con.execute("""
                select distinct sd.doc_ix, sd.doc_id
                from span_documents sd join spans s on sd.span_id = s.span_id
                join trace_runs tr on s.trace_id = tr.trace_id
                where tr.index_dir = ? and sd.doc_id is not null
                order by sd.doc_ix limit 16""", [index_dir]).fetchall()

        folders = check_indexes(docs, lake.home, passes, seen)  # before anything is written or removed
        if rescan:
            with lake.transaction():
                for t in TABLES:
                    for p in lake.partitions(t):
                        lake.delete(t, p)
        n_spans, spans_done = _count_spans(con, min_span)

        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn

        from ingest.progress import progress_bar

        with progress_bar(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                          TimeElapsedColumn(), enabled=progress) as bar:
            with_licence = (_read_documents(lake, docs, folders, bar, bar.add_task("documents", total=len(docs)))
                            if docs else 0)
            counts = {}
            if n_spans:
                cursor = con.execute(_SPANS_TODO, [min_span])
                counts = _scan_spans(lake, cursor, bar, bar.add_task("spans", total=n_spans))
    finally:
        con.close()
    return ProvenanceSummary(min_span, len(docs), docs_done, with_licence, n_spans, spans_done, counts,
                             time.perf_counter() - t0)
