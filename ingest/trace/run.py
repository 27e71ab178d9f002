"""Trace many generations into the lake: batches, worker processes, threads, resumable.

Generations are sorted by id and cut into fixed batches; each batch becomes one partition of `spans`,
`span_documents`, `traced_generations` and `span_counts` (written in that order; `span_counts` last marks
the batch done). A batch's partition name hashes its generations' ids AND texts: a run re-imported or
regenerated with new text under the same ids gets new partitions (the old ones are removed), so a trace is
never reused for a text it was not computed from. `traced_generations` records, per generation, the hash
of the traced text and its length in index tokens; the marts join on that hash.
Each worker process opens the index once; its threads share it (the compiled steps of a trace release the
GIL, building its rows holds it: 2 threads give ~1.75x, BENCHMARKS.md). Before each
batch a worker measures its mapped memory and reopens the engine when it is over the engine's budget
(`IndexEngine.reopen_if_over_budget`), which returns the memory maps' page tables to the OS. A batch's four
partitions are written in one lake transaction: a crash never leaves spans without their `span_counts`
(the batch-done marker) or the reverse. Results depend only on the generation text and the parameters,
never on the number of workers, threads or the order of work.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timezone

from ingest import __version__
from ingest.errors import UserError
from ingest.executors import Executor, WorkerSpec, get_executor
from ingest.home import stored_path
from ingest.lake import Lake, make_key, text_hash
from ingest.trace.params import TraceParams
from ingest.trace.passlock import one_trace_per_pass
from ingest.trace.supersede import FILE_SOURCE, superseded



@dataclass(frozen=True)
class TraceJob:
    index_dirs: tuple[str, ...]
    params: TraceParams
    threads: int = 1

    @property
    def trace_id(self) -> str:
        """What a tracing pass is: the indexes' content (their manifests without where and when they were built:
        file hashes, sizes, token counts, software versions stay) and the parameters. So the same corpus traced
        on two machines, or in two warehouses, is the same pass, and every bootstrap seeded from it agrees."""
        from ingest.index.manifest import IndexManifest

        manifests = [json.dumps(manifest_identity(json.loads(IndexManifest.path_in(d).read_text())), sort_keys=True)
                     for d in self.index_dirs]
        return make_key(hashlib.sha256("\n".join(manifests).encode()).hexdigest(), self.params.to_json())

    @property
    def legacy_trace_id(self) -> str:
        """The id passes had before 2026-12-03 (the raw manifest bytes, absolute paths and build time included):
        a warehouse that holds such a pass keeps using it rather than tracing everything again."""
        from ingest.index.manifest import IndexManifest

        manifests = [IndexManifest.path_in(d).read_bytes() for d in self.index_dirs]
        return make_key(hashlib.sha256(b"".join(manifests)).hexdigest(), self.params.to_json())


# manifest keys that say where or when an index was built, not what it holds
_PLACE_AND_TIME = frozenset({"built_at", "timings", "source_root", "data_dir", "name", "path"})


def manifest_identity(value):
    """A manifest without place and time: the keys above dropped and absolute paths blanked, at any depth."""
    if isinstance(value, dict):
        return {k: manifest_identity(v) for k, v in value.items() if k not in _PLACE_AND_TIME}
    if isinstance(value, list):
        return [manifest_identity(v) for v in value]
    if isinstance(value, str) and os.path.isabs(value):
        return ""
    return value


def open_tracer(job: TraceJob, trace_id: str):
    from ingest.index.engine import IndexEngine
    from ingest.index.tokenizer import load_tokenizer
    from ingest.trace.tracer import Tracer

    engine = IndexEngine(list(job.index_dirs), reopen_every=None)
    m = engine.manifest
    tok = load_tokenizer(m.tokenizer_spec(job.index_dirs[0]))  # where it lies now (a moved warehouse)
    logp = m.load_logprobs(job.index_dirs[0])
    return Tracer(engine, tok, logp, m.unigram_floor if m.unigram_floor is not None else -30.0, job.params, trace_id)


class TraceWorker:
    """Opens the index once; traces batches with `job.threads` threads sharing the engine."""

    def __init__(self, job: TraceJob, trace_id: str):
        self.job = job
        self.tracer = open_tracer(job, trace_id)

    def __call__(self, batch: Sequence[tuple[str, str]]) -> tuple[list, list, list, list]:
        # between batches no thread is using the engine: the only safe moment to reopen it
        self.tracer.engine.reopen_if_over_budget()
        if self.job.threads > 1:
            with ThreadPoolExecutor(self.job.threads) as ex:
                outs = list(ex.map(lambda g: self.tracer.trace(*g), batch))
        else:
            outs = [self.tracer.trace(*g) for g in batch]
        spans, docs, counts, traced = [], [], [], []
        for o in outs:
            spans += o.spans
            docs += o.documents
            counts += o.counts
            traced.append(o.generation)
        return spans, docs, counts, traced


@dataclass(frozen=True)
class TraceSummary:
    trace_id: str
    n_generations: int
    n_batches: int
    n_skipped: int
    n_spans: int
    n_documents: int
    seconds: float


def check_batch_keys(spans: Sequence[dict], docs: Sequence[dict], counts: Sequence[dict]) -> None:
    """The key guarantee that lets a plain `lmaudit build` skip the full-scan tests of `span_documents`.

    Within a batch: span ids are unique, and every document row and count row belongs to a span of the same
    batch (the lake writer also refuses a partition with a repeated key). The batch's four partitions are
    written and deleted together (one transaction). So a span_documents key (a hash of span_id, shard,
    doc_ix) can repeat across the lake only if its span_id does, which the cheap `unique` test on `spans`
    (a quarter of the rows) catches in every build, and no document row can point at a missing span."""
    span_ids = {s["span_id"] for s in spans}
    if len(span_ids) != len(spans):
        raise RuntimeError("tracer bug: a batch produced the same span twice")
    for what, rows in (("document", docs), ("count", counts)):
        orphan = next((r["span_id"] for r in rows if r["span_id"] not in span_ids), None)
        if orphan is not None:
            raise RuntimeError(f"tracer bug: a {what} row of span {orphan} has no span in its batch")


def _plan(generations: Sequence[tuple[str, str]], batch_size: int) -> list[list[tuple[str, str]]]:
    gens = sorted(generations)
    ids = [g[0] for g in gens]
    if len(set(ids)) != len(ids):
        raise UserError("generation ids must be unique within one trace input")
    return [gens[i:i + batch_size] for i in range(0, len(gens), batch_size)]


@one_trace_per_pass  # a second trace of this pass waits: both would replace and write the same ids
def trace_generations(lake: Lake, job: TraceJob, generations: Sequence[tuple[str, str]], source: str,
                      corpus_id: str | None = None, workers: int = 1, batch_size: int = 64,
                      progress: bool = True, executor: Executor | None = None) -> TraceSummary:
    """Trace `generations` [(generation_id, text)] from `source` (a run id or a file) into the lake.
    `executor` decides where workers run (default: local processes, `workers` of them)."""
    if not generations:
        raise UserError(f"nothing to trace: {source} has no generations")
    for what, n in (("--batch-size", batch_size), ("--workers", workers), ("--threads", job.threads)):
        if n < 1:
            raise UserError(f"{what} must be at least 1, got {n}")
    from ingest.index.manifest import IndexManifest

    for d in job.index_dirs:  # one-line errors for a missing folder or manifest, before anything is written
        IndexManifest.load(d)
    open_tracer(job, "check")  # and for damaged index files (sizes, suffix-array spot check, tables)
    lake.recover()  # a killed step's committed batch becomes visible before the plan and its stale set are read
    legacy = job.legacy_trace_id
    trace_id = legacy if f"trace--{legacy}" in lake.partitions("trace_runs") else job.trace_id
    started = datetime.now(timezone.utc)
    batches = _plan(generations, batch_size)
    src = make_key(source)[:12]
    names = [f"{trace_id[:16]}--{src}--{make_key(*[f'{gid}:{text_hash(text)}' for gid, text in b])[:16]}"
             for b in batches]
    # a changed input (e.g. a re-imported run) leaves partitions that no longer belong to the plan
    prefix = f"{trace_id[:16]}--{src}--"
    stale = [(table, part) for table in ("span_counts", "traced_generations", "span_documents", "spans")
             for part in lake.partitions(table) if part.startswith(prefix) and part not in names]
    if source == FILE_SOURCE:  # all files share the prefix: a file's earlier versions are found by their ids
        stale = superseded(lake, f"{trace_id[:16]}--", names, [gid for gid, _ in generations])
    else:  # a file's batch holding these ids (a file exported from this run) is replaced too: one set per id
        stale += superseded(lake, f"{trace_id[:16]}--{make_key(FILE_SOURCE)[:12]}--", names,
                            [gid for gid, _ in generations])

    def pass_row(finished: datetime | None) -> list[dict]:
        # folders inside the warehouse relative to it: a moved or copied warehouse finds them (ingest/home.py)
        dirs = [stored_path(lake.home, d) for d in job.index_dirs]
        return [{"trace_id": trace_id, "corpus_id": corpus_id, "index_dir": json.dumps(dirs),
                 "mode": job.params.mode, "params": job.params.to_json(), "code_version": __version__,
                 "started_at": started, "finished_at": finished}]

    # The pass's row and the removal of stale partitions are committed with the first batch (or the last
    # row, when every batch is done): a trace refused before any batch is written (a damaged index found
    # while tracing) leaves the lake as it was.
    begun: list[bool] = []

    def begin(finished: datetime | None = None) -> None:
        if not begun:
            for table, part in stale:
                lake.delete(table, part)
            lake.write("trace_runs", f"trace--{trace_id}", pass_row(finished))
            begun.append(True)

    todo = [(n, b) for n, b in zip(names, batches) if not lake.is_done("span_counts", n)]
    skipped = len(batches) - len(todo)

    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    from ingest.progress import progress_bar

    n_spans = n_docs = 0
    t0 = time.perf_counter()
    done_gens = 0
    with progress_bar(TextColumn("[bold]trace"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[rate]}"),
                      TimeElapsedColumn(), TimeRemainingColumn(), enabled=progress) as bar:
        task = bar.add_task("", total=len(generations), completed=sum(len(b) for b in batches) - sum(len(b) for _, b in todo), rate="")

        def record(name, result, size):
            nonlocal n_spans, n_docs, done_gens
            spans, docs, counts, traced = result
            check_batch_keys(spans, docs, counts)
            with lake.transaction():  # the batch's four partitions appear together or not at all
                begin()
                lake.write("spans", name, spans)
                lake.write("span_documents", name, docs)
                lake.write("traced_generations", name, traced)
                lake.write("span_counts", name, counts)
            n_spans += len(spans)
            n_docs += len(docs)
            done_gens += size
            el = time.perf_counter() - t0
            bar.update(task, advance=size, rate=f"{done_gens / el:,.1f} gen/s" if el > 0 else "")

        ex = executor or get_executor("local", workers=workers)
        results = ex.map(WorkerSpec(TraceWorker, (job, trace_id)), [b for _, b in todo])
        for (name, b), result in zip(todo, results):
            record(name, result, len(b))
    finished = datetime.now(timezone.utc)
    if begun:
        lake.write("trace_runs", f"trace--{trace_id}", pass_row(finished))
    else:
        with lake.transaction():
            begin(finished)
    return TraceSummary(trace_id, len(generations), len(batches), skipped, n_spans, n_docs, time.perf_counter() - t0)
