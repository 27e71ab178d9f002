"""`lmaudit mia-benchmark label|score`: a membership-inference benchmark labelled by the corpus's index."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ingest.cli.context import console, state
from ingest.mia_benchmark.candidates import CORPUS_MAX_TOKENS
from ingest.mia_benchmark.labels import WINDOW

app = typer.Typer(help="A membership-inference benchmark labelled by exact lookup in a corpus's index "
                       "(docs/mia-benchmark.md).", no_args_is_help=True)


@app.command("label")
def label(
    ctx: typer.Context,
    corpus: Annotated[str, typer.Option(help="Registered corpus whose index decides membership.")],
    reference: Annotated[bool, typer.Option("--reference", help="Label every reference document (held-out text).")]
    = False,
    run: Annotated[list[str] | None, typer.Option("--run", help="Label a run's generations (repeatable).")] = None,
    texts: Annotated[list[Path] | None, typer.Option("--texts", help="A JSONL file of candidates: id, text, "
                                                                     "optional domain (repeatable).")] = None,
    from_corpus: Annotated[int, typer.Option("--from-corpus", help="Draw this many corpus documents (members, "
                                                                   "cut to --max-tokens).")] = 0,
    max_tokens: Annotated[int, typer.Option(help="Index tokens kept of each drawn corpus document.")]
    = CORPUS_MAX_TOKENS,
    seed: Annotated[int, typer.Option(help="Seed of the corpus draw.")] = 0,
    window: Annotated[int, typer.Option(help="A non-member has none of its WINDOW-token windows in the corpus.")]
    = WINDOW,
) -> None:
    """Label candidates member / non_member / ambiguous by exact lookup; a source labelled again is replaced."""
    from ingest.mia_benchmark.run import LabelRequest, label_benchmark

    req = LabelRequest(corpus, reference, tuple(run or ()), tuple(texts or ()), from_corpus, seed, max_tokens, window)
    for line in label_benchmark(state(ctx).lake, req).lines():
        console.print(line, highlight=False, soft_wrap=True)


@app.command("score")
def score(
    ctx: typer.Context,
    corpus: Annotated[str, typer.Option(help="The corpus whose labelled candidates to score.")],
    model: Annotated[str, typer.Option(help="Model folder (save_pretrained) to score them under.")],
    ref_model: Annotated[str | None, typer.Option(help="A second model for the 'Ref' baseline (loss ratio).")] = None,
    batch_size: Annotated[int, typer.Option(help="Texts per forward pass.")] = 8,
    chunk_size: Annotated[int, typer.Option(help="Texts per lake partition (the unit of resuming).")] = 64,
    device: Annotated[str, typer.Option(help="auto (cuda when torch sees a GPU, else cpu), cpu or cuda.")] = "auto",
    dtype: Annotated[str, typer.Option(help="float32, bfloat16 or float16.")] = "float32",
    scoring: Annotated[str, typer.Option(help="authors or lmaudit (as `lmaudit score --scoring`).")] = "authors",
) -> None:
    """Score the benchmark's members and non-members (loss, zlib, Min-K%, Min-K%++); resumable.

    Score the labelled members and non-members as `lmaudit score` does (loss, zlib, Min-K%, Min-K%++), resumable;
    `lmaudit score --methods ...` adds the other baselines for reference documents and runs."""
    from ingest.mia_benchmark.run import unscored_sources
    from ingest.score.run import ScoreJob, score_items

    job = ScoreJob(model, ref_model, batch_size, device, dtype, scoring)  # checks its options (UserError)
    lake = state(ctx).lake
    _ = job.convention  # an unknown --scoring is one line before the model loads
    todo, done = unscored_sources(lake, corpus, model, scoring, ref_model)
    for source in done:
        console.print(f"{source}: every text already scored under this model ({scoring})", highlight=False)
    for source, items in todo:
        s = score_items(lake, job, items, source, chunk_size=chunk_size)
        console.print(f"scored {source}: {s.n_items} texts ({s.n_skipped}/{s.n_chunks} chunks already done) "
                      f"in {s.seconds:.0f}s")
