"""`lmaudit contamination`: is a benchmark in the training corpus, and does the model reproduce it?"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ingest.cli.context import console, state


def contamination(
    ctx: typer.Context,
    bench: Annotated[Path, typer.Argument(help="Benchmark items: JSONL (.gz/.zst) or Parquet with id, input, "
                                               "answer and an optional score per item.")],
    corpus: Annotated[str | None, typer.Option(help="Registered corpus to trace the items against.")] = None,
    index: Annotated[list[Path] | None, typer.Option(help="Or index folder(s) instead of --corpus.")] = None,
    model: Annotated[str | None, typer.Option(help="Model to prefix-attack with each item's input (greedy).")] = None,
    backend: Annotated[str, typer.Option(help="Generation backend for --model: hf (default) or vllm.")] = "hf",
    device: Annotated[str, typer.Option(help="hf backend device: auto (cuda when torch sees a GPU, else cpu), cpu or cuda.")] = "auto",
    name: Annotated[str | None, typer.Option(help="Benchmark name (default: the file name without suffix).")] = None,
) -> None:
    """Trace a benchmark's items against the corpus; with --model, ask whether the model reproduces answers.

    Every item's input and answer is traced; with --model, the model is given the input and its continuation
    is checked against the answer. Then `lmaudit build` makes fct_contamination_items and fct_contamination_benchmarks."""
    from ingest.contamination.run import run_contamination
    from ingest.corpora import corpus_row
    from ingest.errors import UserError

    lake = state(ctx).lake
    if (corpus is None) == (not index):
        raise UserError("pass exactly one of --corpus NAME or --index DIR")
    corpus_id = None
    if index:
        dirs = tuple(str(Path(d).resolve()) for d in index)
    else:
        row = corpus_row(lake, corpus)
        dirs, corpus_id = tuple(row["index_dirs"]), row["corpus_id"]
    be = None
    if model is not None:
        from ingest.contamination.items import read_items
        from ingest.generate.backends import get_backend

        read_items(bench)  # a bad file is refused before a model is loaded
        be = get_backend(backend, model, **({"device": device} if backend == "hf" else {}))
    s = run_contamination(lake, bench, dirs, corpus_id=corpus_id, name=name, backend=be, model=model)
    line = (f"benchmark {s.benchmark}: {s.n_items} items traced, {s.n_items_with_spans} with text in the corpus "
            f"({s.n_spans} spans); trace {s.trace_id[:12]}")
    if model is not None:
        line += f"; {s.n_reproduced}/{s.n_attacked} answers reproduced by {model}"
    console.print(line, highlight=False)
    console.print("run `lmaudit build` for fct_contamination_items and fct_contamination_benchmarks", highlight=False)


def contamination_sample(
    ctx: typer.Context,
    corpus: Annotated[str, typer.Option(help="Registered corpus to draw the items from.")],
    out: Annotated[Path, typer.Option(help="Benchmark file to write (.jsonl).")],
    n: Annotated[int, typer.Option(help="Items of each kind: copied, half-copied, fresh.")] = 20,
    seed: Annotated[int, typer.Option(help="Which documents and words are drawn.")] = 0,
    model: Annotated[str | None, typer.Option(help="Also write each item's score under this model: the mean "
                                                   "log-probability of the answer's tokens given the input.")] = None,
) -> None:
    """Write a small benchmark with a known answer for `lmaudit contamination` (README's sandbox recipe).

    Its items are copied from the corpus, half-copied, or written fresh."""
    import json

    from ingest.contamination.sample import item_records, sample_benchmark
    from ingest.corpora import open_corpus
    from ingest.errors import UserError

    if not out.name.endswith(".jsonl"):
        raise UserError(f"--out {out}: write a .jsonl file")
    if out.parent and not out.parent.is_dir():
        raise UserError(f"--out {out}: folder {out.parent} does not exist; create it first")
    oc = open_corpus(state(ctx).lake, corpus)
    items = sample_benchmark(oc.engine, oc.tokenizer, n, seed)
    if model is not None:
        from ingest.contamination.answer_scores import score_items

        items = score_items(model, items)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in item_records(items)), encoding="utf-8")
    tmp.replace(out)
    console.print(f"wrote {len(items)} items to {out} ({n} copied, {n} half-copied, {n} fresh"
                  f"{'; scored by ' + model if model else ''})", highlight=False)


def register(app: typer.Typer) -> None:
    app.command("contamination")(contamination)
    app.command("contamination-sample")(contamination_sample)
