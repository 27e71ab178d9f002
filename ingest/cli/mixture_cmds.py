"""`lmaudit mixture tokenizer`: the training mixture read from a BPE tokenizer's merge list (bpe_merges)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ingest.cli.context import console, state

app = typer.Typer(help="Training-mixture estimates that need no generations.", no_args_is_help=True)


@app.command("tokenizer")
def tokenizer(
    ctx: typer.Context,
    tokenizer_path: Annotated[Path, typer.Option("--tokenizer", help="A tokenizer.json or a folder holding one (byte-level or byte-fallback BPE).")],
    reference: Annotated[Optional[Path], typer.Option("--reference", help="Labelled reference text (JSONL/Parquet with domain and text) instead of the warehouse's reference_docs.")] = None,
    reference_source: Annotated[Optional[str], typer.Option("--reference-source", help="Use only this source of reference_docs (e.g. sandbox-tiny-code-heavy).")] = None,
    domain: Annotated[Optional[list[str]], typer.Option("--domain", help="Use only these domains (repeat the option).")] = None,
    model: Annotated[Optional[str], typer.Option("--model", help="Model key to file the estimate under (default: the tokenizer's folder, absolute), as mixtures_documented names it.")] = None,
    max_merges: Annotated[int, typer.Option("--max-merges", help="Replay only the first N merges; 0 = all (the LP with pair slack over thousands of merges takes minutes per solve; on the sandbox's tokenizers the first 300 were the most accurate).")] = 300,
    step_slack_only: Annotated[bool, typer.Option("--step-slack-only", help="Relax the LP per merge step only, without the paper's slack per pair.")] = False,
    n_boot: Annotated[int, typer.Option("--n-boot", help="Bootstrap replicates over reference documents.")] = 100,
    seed: Annotated[int, typer.Option("--seed", help="Bootstrap seed.")] = 0,
    ci_level: Annotated[float, typer.Option("--ci-level", help="Interval level.")] = 0.95,
    top_k: Annotated[int, typer.Option("--top-k", help="Most violated pairs added per merge step and LP round.")] = 5,
) -> None:
    """Replay the tokenizer's merges on each domain's reference text and solve Hayase et al.'s LP for the
    mixture that makes every merge the most frequent pair; write it to tokenizer_mixture_estimates."""
    from ingest.errors import UserError
    from ingest.mixture.tokenizer import estimate_tokenizer_mixture, load_bpe
    from ingest.mixture.tokenizer.store import (estimate_rows, file_references, lake_references, model_key,
                                                write_estimate)

    if n_boot < 0 or not 0 < ci_level < 1 or top_k < 1 or max_merges < 0:
        raise UserError("--n-boot must be >= 0, --ci-level in (0, 1), --top-k >= 1 and --max-merges >= 0 (0 = all)")
    tok = load_bpe(tokenizer_path)
    lake = state(ctx).lake
    if reference is not None:
        docs = file_references(reference)
        if domain:
            docs = [d for d in docs if d.domain in set(domain)]
        source = str(reference)
    else:
        docs = lake_references(lake, reference_source, domain)
        source = f"reference_docs{'' if reference_source is None else ':' + reference_source}"
    if not docs:
        raise UserError(f"no reference documents of the domains {', '.join(domain or [])}")
    est = estimate_tokenizer_mixture(tok, docs, max_merges=max_merges or None, n_boot=n_boot, seed=seed,
                                     level=ci_level, top_k=top_k, pair_slack=not step_slack_only)
    key = model_key(tokenizer_path, model)
    write_estimate(lake, estimate_rows(est, key, str(tok.path), source))
    s = est.solution
    console.print(f"bpe_merges for {key}: {est.n_merges_used} merges, {sum(est.n_docs.values())} reference "
                  f"documents, {s.n_constraints} constraints in {s.iterations} LP rounds ({s.status}), "
                  f"{est.seconds:.1f}s", highlight=False, markup=False, soft_wrap=True)
    for i, d in enumerate(est.domains):
        ci = "" if est.n_boot == 0 else f"  [{100 * est.ci_low[i]:5.1f}, {100 * est.ci_high[i]:5.1f}]"
        console.print(f"  {d:<16} {100 * est.estimate[i]:5.1f} %{ci}", highlight=False, markup=False)
    console.print("next: lmaudit build; lmaudit sql \"select * from fct_mixture_sources\"", markup=False)
