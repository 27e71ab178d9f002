"""`lmaudit score`: token log-probabilities of texts under a model (membership-inference baselines)."""

from __future__ import annotations

from typing import Annotated

import typer

from ingest.cli.context import console, state


def score(
    ctx: typer.Context,
    model: Annotated[str, typer.Option(help="Model folder (save_pretrained) whose log-probabilities to record.")],
    reference: Annotated[bool, typer.Option("--reference", help="Score every labelled reference document.")] = False,
    run: Annotated[list[str] | None, typer.Option("--run", help="Score a run's generations (repeatable).")] = None,
    ref_model: Annotated[str | None, typer.Option(help="A second model for the 'Ref' baseline (loss ratio).")] = None,
    batch_size: Annotated[int, typer.Option(help="Texts per forward pass.")] = 8,
    chunk_size: Annotated[int, typer.Option(help="Texts per lake partition (the unit of resuming).")] = 64,
    device: Annotated[str, typer.Option(help="auto (cuda when torch sees a GPU, else cpu), cpu or cuda.")] = "auto",
    dtype: Annotated[str, typer.Option(help="float32, bfloat16 or float16.")] = "float32",
    executor: Annotated[str, typer.Option(help="local or ray.")] = "local",
    workers: Annotated[int, typer.Option(help="Workers, each loading the model.")] = 1,
    scoring: Annotated[str, typer.Option(help="authors (LLMSurgeon's scripts: no start token, <= 512 tokens, zlib "
                                              "level 6, Min-K% over max(1, int(k n)) tokens) or lmaudit (start "
                                              "token, zlib level 9, ceil(k n)); rows of both are kept apart.")]
    = "authors",
    methods: Annotated[str | None, typer.Option(help="More Table-2 baselines into text_method_scores, comma-separated: "
                                                     "dcpdd, recall, gradnorm, jointlogit, neighbor (authors' convention).")]
    = None,
    recall_prefix: Annotated[str | None, typer.Option(help="ReCaLL: a file of non-member text to prepend (default: 12 "
                                                           "reference documents drawn with seed 0, as the authors' "
                                                           "script).")] = None,
    dcpdd_corpus: Annotated[str | None, typer.Option(help="DC-PDD: token frequencies from this registered corpus's "
                                                          "unigram table (default: the pooled reference documents, "
                                                          "as the authors' script).")] = None,
    neighbor_model: Annotated[str | None, typer.Option(help="Neighbor: a masked LM folder whose fills make the "
                                                            "neighbours (default: random words of the reference "
                                                            "documents, as the authors' script).")] = None,
) -> None:
    """Score texts for membership inference: loss, zlib, Min-K%, Min-K%++ (--methods: the others); resumable.

    Per-token log-probabilities are recorded beside the scores."""
    from ingest.errors import UserError
    from ingest.executors import get_executor
    from ingest.score.method_run import method_job, parse_methods, score_methods
    from ingest.score.run import ScoreJob, reference_items, run_items, score_items

    if not reference and not run:
        raise UserError("say what to score: --reference and/or --run R")
    job = ScoreJob(model, ref_model, batch_size, device, dtype, scoring)  # checks its options (UserError)
    lake = state(ctx).lake
    job.convention  # an unknown --scoring is one line before the model loads
    names = parse_methods(methods)
    if names and scoring != "authors":
        raise UserError("--methods scores under the authors' convention only; drop --scoring lmaudit")
    if recall_prefix and "recall" not in names:
        raise UserError("--recall-prefix is for ReCaLL; add --methods recall")
    if dcpdd_corpus and "dcpdd" not in names:
        raise UserError("--dcpdd-corpus is for DC-PDD; add --methods dcpdd")
    if neighbor_model and "neighbor" not in names:
        raise UserError("--neighbor-model is for Neighbor; add --methods neighbor")
    mjob = method_job(lake, model, names, batch_size, device, dtype, recall_prefix, dcpdd_corpus,
                      neighbor_model) if names else None
    sources = ([("reference", reference_items(lake))] if reference else []) + \
        [(f"run:{r}", run_items(lake, r)) for r in (run or [])]
    ex = get_executor(executor, workers=workers) if executor != "local" or workers > 1 else None
    for source, items in sources:
        s = score_items(lake, job, items, source, chunk_size=chunk_size, workers=workers, executor=ex)
        console.print(f"scored {source}: {s.n_items} texts ({s.n_skipped}/{s.n_chunks} chunks already done) "
                      f"in {s.seconds:.0f}s")
        if mjob is not None:
            m = score_methods(lake, mjob, items, source, chunk_size=chunk_size, workers=workers, executor=ex)
            console.print(f"scored {source} with {', '.join(names)}: {m.n_items} texts ({m.n_skipped}/"
                          f"{m.n_partitions} partitions already done) in {m.seconds:.0f}s")
