"""`lmaudit sandbox build|reference`: the offline sandbox (corpus, tokenizer, index, tiny GPT-2), registered
as a corpus with its documented mixture, and labelled reference documents for the mixture classifier."""

from __future__ import annotations

import json
from typing import Annotated, Optional

import typer

from ingest.cli.context import console, state
from ingest.sandbox.register import build_and_register, import_sandbox_references
from ingest.sandbox.sizes import sandbox_size

app = typer.Typer(help="The embedded offline sandbox: a real corpus, tokenizer, index and tiny model.",
                  no_args_is_help=True)


_SIZE = Annotated[str, typer.Option(help="tiny (tests, ~1 min), small, or default (demo, ~10 min).")]
_SEED = Annotated[int, typer.Option(help="Seed of the corpus order, canary, model init and training.")]
_MIXTURE = Annotated[Optional[str], typer.Option(
    help="Train on a known domain mixture instead: a preset (balanced, code-heavy, docs-heavy) or weights "
         "such as code=0.6,documentation=0.4 over code, boilerplate, documentation, headers. The size's byte "
         "budget is spread by the weights, documents are cut into equal pieces, and no canary is planted.")]
_CANARY = Annotated[Optional[int], typer.Option(help="Override the number of planted canary copies.")]
_STEPS = Annotated[Optional[int], typer.Option(
    help="Override the training step budget (mixture recovery needs a model that imitates its data: the "
         "tiny mixtures reach >= 90% overlap accuracy at 1200 steps, not at tiny's 420; BENCHMARKS.md).")]

_CHECKPOINT_EVERY = Annotated[int, typer.Option(
    help="Also keep the model every N training steps as its own model folder, <model>/checkpoints/step-NNNNNN "
         "(0 = none); runs of a checkpoint record revision step<N> for the trajectory marts.")]
_INDEX_TOKENIZER = Annotated[str, typer.Option(
    help="model (the index uses the model's own tokenizer) or llama-style (a Llama-2-style tokenizer trained on "
         "the same corpus: byte fallback, '▁' word starts; the model keeps its own; registered as corpus "
         "sandbox-<size>-llama). PropMe's own configuration: model and index tokenizers differ.")]


@app.command("build")
def build(ctx: typer.Context, size: _SIZE = "default", seed: _SEED = 0, mixture: _MIXTURE = None,
          canary_copies: _CANARY = None, steps: _STEPS = None, index_tokenizer: _INDEX_TOKENIZER = "model",
          checkpoint_every: _CHECKPOINT_EVERY = 0) -> None:
    """Build the sandbox (cached: a second call is instant), register its corpus and its documented mixture."""
    st = state(ctx)
    paths, name = build_and_register(st.lake, st.home, sandbox_size(size, mixture, canary_copies, steps,
                                                                     checkpoint_every), seed,
                                     index_tokenizer=index_tokenizer)
    mix = json.loads(paths.mixture_json.read_text())
    console.print(f"sandbox {paths.size.name}: corpus {name!r} registered; model at {paths.model_dir}")
    total = sum(m["docs"] for m in mix["domains"].values()) or 1
    for dom, m in mix["domains"].items():
        console.print(f"  {dom:<14} {m['docs']:>6} docs ({m['docs'] / total:6.1%})  {m['bytes']:>10,} bytes  "
                      f"{m.get('tokens') or 0:>9,} tokens")


@app.command("reference")
def reference(ctx: typer.Context, size: _SIZE = "default", seed: _SEED = 0, mixture: _MIXTURE = None,
              canary_copies: _CANARY = None, steps: _STEPS = None,
              per_domain: Annotated[int, typer.Option(help="Reference documents per domain.")] = 150,
              folds: Annotated[int, typer.Option(help="Cross-fitting folds.")] = 5) -> None:
    """Import held-out reference documents of the sandbox's domains for `lmaudit classify train`.

    The documents are files of the sandbox's domains that its corpus did not use. A sandbox not built yet is
    built first, with the same progress as `lmaudit sandbox build` (tiny ~1 min, default ~10 min)."""
    st = state(ctx)
    # progress on: a sandbox not built yet trains its model here first (minutes, silent before)
    paths, name = build_and_register(st.lake, st.home, sandbox_size(size, mixture, canary_copies, steps), seed)
    s = import_sandbox_references(st.lake, paths, name, per_domain, folds, seed)
    console.print(s.line())
    console.print("next: lmaudit classify train --backend tfidf; lmaudit classify score --run RUN")

