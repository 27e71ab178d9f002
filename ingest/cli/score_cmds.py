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
    device: Annotated[str, typer.Option(help="cpu, cuda or auto.")] = "cpu",
    dtype: Annotated[str, typer.Option(help="float32, bfloat16 or float16.")] = "float32",
    executor: Annotated[str, typer.Option(help="local or ray.")] = "local",
    workers: Annotated[int, typer.Option(help="Workers, each loading the model.")] = 1,
    scoring: Annotated[str, typer.Option(help="authors (LLMSurgeon's scripts: no start token, <= 512 tokens, zlib "
                                              "level 6, Min-K% over max(1, int(k n)) tokens) or lmaudit (start "
                                              "token, zlib level 9, ceil(k n)); rows of both are kept apart.")]
    = "authors",
) -> None:
    """Record per-token log-probabilities and loss / zlib / Min-K% / Min-K%++ scores; resumable."""
    from ingest.errors import UserError
    from ingest.executors import get_executor
    from ingest.score.run import ScoreJob, reference_items, run_items, score_items

    if not reference and not run:
        raise UserError("say what to score: --reference and/or --run R")
    if batch_size < 1:
        raise UserError("--batch-size must be at least 1")
    if device not in ("cpu", "cuda", "auto"):
        raise UserError(f"--device must be cpu, cuda or auto, not {device!r}")
    if dtype not in ("float32", "bfloat16", "float16"):
        raise UserError(f"--dtype must be float32, bfloat16 or float16, not {dtype!r}")
    lake = state(ctx).lake
    job = ScoreJob(model, ref_model, batch_size, device, dtype, scoring)
    job.convention  # an unknown --scoring is one line before the model loads
    sources = ([("reference", reference_items(lake))] if reference else []) + \
        [(f"run:{r}", run_items(lake, r)) for r in (run or [])]
    ex = get_executor(executor, workers=workers) if executor != "local" or workers > 1 else None
    for source, items in sources:
        s = score_items(lake, job, items, source, chunk_size=chunk_size, workers=workers, executor=ex)
        console.print(f"scored {source}: {s.n_items} texts ({s.n_skipped}/{s.n_chunks} chunks already done) "
                      f"in {s.seconds:.0f}s")
