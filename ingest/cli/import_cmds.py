"""`lmaudit import ...`: data made elsewhere into the lake."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ingest.cli.context import console, state

app = typer.Typer(help="Bring data made elsewhere into the lake.", no_args_is_help=True)


@app.command("generations")
def generations(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="JSONL (.jsonl[.gz|.zst]) or Parquet with `text`; optional `prompt_id`, `sample_idx`, `prompt`, `seed`, `n_tokens`, `finish_reason`.")],
    run_id: Annotated[str, typer.Option("--run-id", help="Name of the run; importing the same run again replaces it.")],
    model: Annotated[str, typer.Option(help="Model name or path that produced the generations.")],
    setting: Annotated[str, typer.Option(help="unconditional, minimal_cue, generic, specific or prefix.")],
    corpus: Annotated[str | None, typer.Option(help="Name of the registered training corpus (see `lmaudit index`).")] = None,
    purpose: Annotated[str, typer.Option(help="propme (the PropMe marts use the run), mixture (a neutral run for "
                                              "the mixture estimate) or other.")] = "propme",
) -> None:
    """Import generations made elsewhere (e.g. vLLM outputs); nothing is written if any row is invalid."""
    from ingest.importers.generations import import_generations

    s = import_generations(state(ctx).lake, file, run_id=run_id, model=model, setting=setting,
                           corpus=corpus, purpose=purpose)
    verb = "replaced" if s.replaced else "imported"
    blank = f" ({s.n_blank} empty or whitespace-only, kept)" if s.n_blank else ""
    console.print(f"{verb} run {s.run_id}: {s.n_generations} generations{blank}, {s.n_new_prompts} new prompts")
