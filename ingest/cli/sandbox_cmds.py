"""`lmaudit sandbox build`: the offline sandbox (corpus, tokenizer, index, tiny GPT-2), registered as a corpus."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from ingest.cli.context import console, state

app = typer.Typer(help="The embedded offline sandbox: a real corpus, tokenizer, index and tiny model.",
                  no_args_is_help=True)


def build_and_register(lake, home, size: str, seed: int = 0, progress: bool = True):
    """Build (or reuse) the sandbox under <warehouse>/sandbox/<size> and register its corpus."""
    from ingest.corpora import register_corpus
    from ingest.sandbox.build import build_sandbox
    from ingest.sandbox.indexing import sandbox_index_builder

    paths = build_sandbox(size, home / "sandbox" / f"{size}-seed{seed}", seed=seed,
                          index_builder=sandbox_index_builder, progress=progress)
    name = f"sandbox-{size}" if seed == 0 else f"sandbox-{size}-seed{seed}"
    register_corpus(lake, name, [paths.index_dir])
    return paths, name


@app.command("build")
def build(
    ctx: typer.Context,
    size: Annotated[str, typer.Option(help="tiny (tests, ~1 min), small, or default (demo, ~10 min).")] = "default",
    seed: Annotated[int, typer.Option(help="Seed of the corpus order, canary, model init and training.")] = 0,
) -> None:
    """Build the sandbox (cached: a second call is instant) and register its corpus."""
    st = state(ctx)
    paths, name = build_and_register(st.lake, st.home, size, seed)
    mixture = json.loads(paths.mixture_json.read_text())
    console.print(f"sandbox {size}: corpus {name!r} registered; model at {paths.model_dir}")
    console.print(json.dumps(mixture.get("domains", mixture), indent=1)[:2000])
