"""`lmaudit contamination`: read and check the benchmark, trace it, optionally prefix-attack a model, then
write everything in one lake transaction (`contamination_items`, `contamination_spans`, and with a model
`contamination_attacks`).

A benchmark is known by its name (default: the file name without suffixes). Running again with the same
name against the same index replaces that benchmark's rows (its partitions are rewritten, never appended
to), so a step is resumable by re-running it; another index is another tracing pass, kept beside it.

The attacked model is recorded as runs record it (`ingest.home.stored_model`: a folder inside the warehouse
relative to it, one elsewhere by its absolute path, a hub name as given), in `contamination_attacks.model`, the
attack ids and the partition's name, so a moved or copied warehouse keeps one key and no row names its place.
A rerun with `--model` replaces the benchmark's attacks of that model: also those filed under another spelling
the marts read as the same model (`ingest.home.model_key`: the folder's absolute path, as lmaudit recorded it
before 2026-12-07, here or in the place the warehouse was moved from). Their attacks on the same texts with
the same token budget and prompt length are taken over (only `model` and `attack_id` change; `prefix_attack`
checks first that the model still writes what it wrote), not made again, and their partition goes.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from ingest.contamination.attack import Attack, item_hash, prefix_attack
from ingest.contamination.items import read_items
from ingest.contamination.tracing import span_row, trace_items, trace_job
from ingest.errors import UserError
from ingest.lake import Lake, make_key, partition_name

TABLE = "contamination_attacks"


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
    from ingest.home import stored_model

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
    texts = {it.item_id: item_hash(it.input, it.answer) for it in items}
    recorded, attack_part, former = None, None, []
    if backend is not None:
        recorded = stored_model(lake.home, model)
        attack_part = partition_name("bench", bench, "model", recorded)
        former = former_attacks(lake, bench, recorded, attack_part)
    # the former spellings' attacks on these texts, the newest of each item
    old = {r["item_id"]: r for p in former for r in lake.read(TABLE, p).to_pylist()
           if r["item_hash"] == texts.get(r["item_id"])}
    done = {i: Attack(r["item_id"], r["continuation"], r["n_tokens"], r["max_new_tokens"], r["prompt_tokens"],
                      r["answer_prefix_share"], r["reproduced"]) for i, r in old.items()}
    attacks = prefix_attack(backend, items, progress=progress, done=done) if backend is not None else []

    now = datetime.now(timezone.utc)
    item_rows = [{"item_row_id": make_key(bench, trace_id, t.item.item_id), "benchmark": bench, "trace_id": trace_id,
                  "corpus_id": corpus_id, "item_id": t.item.item_id, "input_text": t.item.input,
                  "answer_text": t.item.answer, "score": t.item.score, "input_tokens": t.input_tokens,
                  "answer_tokens": t.answer_tokens, "source": str(file.resolve()), "created_at": now}
                 for t in traced]
    spans = [span_row(bench, trace_id, s) for t in traced for s in t.spans]
    attack_rows = [{"attack_id": make_key(bench, a.item_id, recorded), "benchmark": bench, "item_id": a.item_id,
                    "item_hash": texts[a.item_id],
                    "model": recorded, "continuation": a.continuation, "n_tokens": a.n_tokens,
                    "max_new_tokens": a.max_new_tokens, "prompt_tokens": a.prompt_tokens,
                    "answer_prefix_share": a.answer_prefix_share, "reproduced": a.reproduced,
                    # a taken-over attack keeps the time it was made
                    "created_at": old[a.item_id]["created_at"] if a is done.get(a.item_id) else now}
                   for a in attacks]
    part = partition_name("bench", bench, trace_id[:16])
    with lake.transaction():  # items, spans and attacks appear together or not at all
        lake.write("contamination_spans", part, spans)
        lake.write("contamination_items", part, item_rows)
        if attack_rows:
            lake.write(TABLE, attack_part, attack_rows)
            for p in former:  # taken over or replaced: one copy of the model's attacks
                lake.delete(TABLE, p)
    return ContaminationSummary(bench, trace_id, len(items), sum(1 for t in traced if t.spans), len(spans),
                                len(attacks), sum(a.reproduced for a in attacks))


def former_attacks(lake: Lake, bench: str, recorded: str, own: str) -> list[str]:
    """The partitions of `bench`'s attacks filed under another spelling of the model recorded as `recorded`:
    one the marts read as the same model (`ingest.home.model_key`, as stg_contamination_attacks reads it), such
    as the folder's absolute path that lmaudit recorded before 2026-12-07, also where the warehouse was moved
    from (that place gone). Kept beside the rerun's, they would be two copies of one model's attacks. Oldest first.
    Never a folder still there outside this warehouse (another warehouse's sandbox model of the same name:
    another model: `ingest.home.spelling_of`)."""
    from ingest.home import spelling_of

    found = []
    for part in lake.partitions(TABLE):
        if part == own:
            continue
        rows = lake.read(TABLE, part).select(["benchmark", "model", "created_at"]).to_pylist()
        m = rows[0]["model"] if rows else None
        if rows and rows[0]["benchmark"] == bench and m is not None and spelling_of(lake.home, recorded, m):
            newest = max((r["created_at"] for r in rows if r["created_at"] is not None), default=None)
            found.append((newest or datetime.min.replace(tzinfo=timezone.utc), part))
    return [p for _, p in sorted(found)]
