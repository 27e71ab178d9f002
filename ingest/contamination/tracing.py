"""Tracing a benchmark item's input and answer against the corpus with the existing SimpleTrace tracer.

The tracer runs with `min_span_len=1` in mixed mode, so its spans are every maximal substring of the text
(in index tokens) that occurs in the corpus: an n-gram of the text occurs in the corpus exactly when it lies
inside one of them, for any n. That lets the dbt models apply the n-gram rule with n as a var, without
tracing again. Input and answer are traced separately: an n-gram across their boundary is not looked up
(how the two are joined is a harness's formatting choice; docs/contamination.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ingest.contamination.items import BenchItem
from ingest.lake import make_key
from ingest.trace.params import TraceParams
from ingest.trace.run import TraceJob, open_tracer

PARTS = ("input", "answer")
SPAN_PARAMS = TraceParams(mode="mixed", min_span_len=1)  # every maximal span, whatever its length


@dataclass(frozen=True)
class TracedItem:
    item: BenchItem
    input_tokens: int
    answer_tokens: int
    spans: tuple[dict, ...]  # `contamination_spans` rows without the benchmark's key columns filled


def trace_job(index_dirs: Sequence[str]) -> TraceJob:
    return TraceJob(tuple(index_dirs), SPAN_PARAMS)


def trace_items(job: TraceJob, items: Sequence[BenchItem], progress: bool = True) -> tuple[str, list[TracedItem]]:
    """(trace_id, the traced items). The trace id is the tracer's: the index content and the parameters."""
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn

    from ingest.progress import progress_bar

    trace_id = job.trace_id
    tracer = open_tracer(job, trace_id)
    out: list[TracedItem] = []
    with progress_bar(TextColumn("[bold]trace items"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      enabled=progress) as bar:
        task = bar.add_task("", total=len(items))
        for it in items:
            lengths, spans = {}, []
            for part, text in zip(PARTS, (it.input, it.answer)):
                t = tracer.trace(f"{it.item_id}\x1f{part}", text)
                lengths[part] = t.generation["n_index_tokens"]
                seen = set()
                for s in t.spans:
                    key = (s["start_tok"], s["end_tok"])
                    if key in seen:  # a merged span can equal a maximal one: one row per extent
                        continue
                    seen.add(key)
                    spans.append({"item_id": it.item_id, "part": part, "start_tok": s["start_tok"],
                                  "end_tok": s["end_tok"], "length": s["length"], "count": s["count"],
                                  "text": s["text"]})
            out.append(TracedItem(it, lengths["input"], lengths["answer"], tuple(spans)))
            bar.update(task, advance=1)
    return trace_id, out


def span_row(benchmark: str, trace_id: str, span: dict) -> dict:
    return {"span_row_id": make_key(benchmark, trace_id, span["item_id"], span["part"], span["start_tok"],
                                    span["end_tok"]),
            "benchmark": benchmark, "trace_id": trace_id, **span}
