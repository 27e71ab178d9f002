"""`lmaudit contamination`: read and check the benchmark, trace it, optionally prefix-attack a model, then
write everything in one lake transaction (`contamination_items`, `contamination_spans`, and with a model
`contamination_attacks`).

A benchmark is known by its name (default: the file name without suffixes). Running again with the same
name against the same index replaces that benchmark's rows (its partitions are rewritten, never appended
to), so a step is resumable by re-running it; another index is another tracing pass, kept beside it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from ingest.contamination.attack import item_hash, prefix_attack
from ingest.contamination.items import read_items
from ingest.contamination.tracing import span_row, trace_items, trace_job
from ingest.errors import UserError
from ingest.lake import Lake, make_key, partition_name


@dataclass(frozen=True)
class ContaminationSummary:
    benchmark: str
    trace_id: str
    n_items: int
    n_items_with_spans: int
    n_spans: int
    n_attacked: int
    n_reproduced: int


def benchmark_name(file: Path, name: str | None) -> str:
    from ingest.names import check_name

    if name is None:
        name = file.name
        for suffix in (".gz", ".zst", ".jsonl", ".json", ".ndjson", ".parquet"):
            name = name.removesuffix(suffix)
    check_name("benchmark name", name)
    return name


def run_contamination(lake: Lake, file: str | Path, index_dirs: tuple[str, ...], *, corpus_id: str | None = None,
                      name: str | None = None, backend=None, model: str | None = None,
                      progress: bool = True) -> ContaminationSummary:
    """Validate the whole file, trace every item, attack with `backend` (named `model`) if given, then write."""
    file = Path(file)
    items = read_items(file)
    bench = benchmark_name(file, name)
    if backend is not None and not model:
        raise UserError("a prefix attack needs the model's name (--model)")
    from ingest.index.manifest import IndexManifest

    for d in index_dirs:  # one-line errors for a missing folder or manifest
        IndexManifest.load(d)
    job = trace_job(index_dirs)
    trace_id, traced = trace_items(job, items, progress=progress)
    attacks = prefix_attack(backend, items, progress=progress) if backend is not None else []

    now = datetime.now(timezone.utc)
    item_rows = [{"item_row_id": make_key(bench, trace_id, t.item.item_id), "benchmark": bench, "trace_id": trace_id,
                  "corpus_id": corpus_id, "item_id": t.item.item_id, "input_text": t.item.input,
                  "answer_text": t.item.answer, "score": t.item.score, "input_tokens": t.input_tokens,
                  "answer_tokens": t.answer_tokens, "source": str(file.resolve()), "created_at": now}
                 for t in traced]
    spans = [span_row(bench, trace_id, s) for t in traced for s in t.spans]
    texts = {it.item_id: item_hash(it.input, it.answer) for it in items}
    attack_rows = [{"attack_id": make_key(bench, a.item_id, model), "benchmark": bench, "item_id": a.item_id,
                    "item_hash": texts[a.item_id],
                    "model": model, "continuation": a.continuation, "n_tokens": a.n_tokens,
                    "max_new_tokens": a.max_new_tokens, "prompt_tokens": a.prompt_tokens,
                    "answer_prefix_share": a.answer_prefix_share,
                    "reproduced": a.reproduced, "created_at": now} for a in attacks]
    part = partition_name("bench", bench, trace_id[:16])
    with lake.transaction():  # items, spans and attacks appear together or not at all
        lake.write("contamination_spans", part, spans)
        lake.write("contamination_items", part, item_rows)
        if attack_rows:
            lake.write("contamination_attacks", partition_name("bench", bench, "model", model), attack_rows)
    return ContaminationSummary(bench, trace_id, len(items), sum(1 for t in traced if t.spans), len(spans),
                                len(attacks), sum(a.reproduced for a in attacks))
