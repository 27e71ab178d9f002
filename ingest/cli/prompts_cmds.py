"""`lmaudit prompts build`: the prompt sets of the five settings, into the `prompts` table."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ingest.cli.context import console, state

app = typer.Typer(help="Build the prompt sets of the PropMe settings.", no_args_is_help=True)


@app.command("build")
def build(
    ctx: typer.Context,
    corpus: Annotated[str, typer.Option(help="Registered corpus (see `lmaudit index build`).")],
    setting: Annotated[list[str], typer.Option(help="unconditional, minimal_cue, generic, specific, prefix (PropMe), or neutral (36 neutral prefixes for mixture sampling); repeatable.")],
    n: Annotated[int, typer.Option(help="Prompts per prompted setting.")] = 1000,
    lang: Annotated[str, typer.Option(help="Language of cue words and sentences (wordfreq code, e.g. en, da).")] = "en",
    file: Annotated[Path | None, typer.Option(help="Sentence file for generic/specific.")] = None,
    match_file: Annotated[Path | None, typer.Option(help="For specific: the generic sentence file to length-match against.")] = None,
    seed: Annotated[int, typer.Option(help="Sampling seed.")] = 0,
    no_leakage_filter: Annotated[bool, typer.Option(help="Keep sentences found in the training corpus.")] = False,
) -> None:
    """Build prompt sets and report what the leakage filter removed."""
    from ingest.prompts.build import build_prompt_set

    for s in setting:
        ps, notes = build_prompt_set(state(ctx).lake, corpus, s, n=n, lang=lang, seed=seed, file=file,
                                     match_file=match_file, check_leakage=not no_leakage_filter)
        removed = sum(ps.dropped.values())
        console.print(f"{s}: {len(ps.kept)} prompts kept, {removed} removed by the leakage filter"
                      + "".join(f"; {k}: {v}" for k, v in ps.dropped.items()) + "".join(f"; {x}" for x in notes))
