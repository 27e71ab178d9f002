"""`lmaudit mixture tokenizer`: the training mixture read from a BPE tokenizer's merge list (bpe_merges);
`lmaudit mixture documented add`: a model's documented mixture, the truth `fct_mixture_evaluation` scores against."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ingest.cli.context import console, err_console, state

app = typer.Typer(help="Training-mixture estimates that need no generations, and documented mixtures.",
                  no_args_is_help=True)
documented_app = typer.Typer(help="Documented training mixtures (what a model's report says it was trained on).",
                             no_args_is_help=True)
app.add_typer(documented_app, name="documented")


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


@documented_app.command("add")
def documented_add(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="CSV with columns domain,share (one row per domain), or YAML: a list "
                                              "of {domain, share} or a mapping domain: share.")],
    model: Annotated[str, typer.Option("--model", help="The model as its runs name it (a model folder or hub "
                                                      "name; runs match it by full name or last path segment, "
                                                      "case-insensitively).")],
    source: Annotated[Optional[str], typer.Option("--source", help="Where the mixture is documented (a report, "
                                                                  "a URL); default: the file's path.")] = None,
) -> None:
    """Register a model's documented training mixture (replacing an earlier one of the same model); shares not
    summing to 1 are normalised, with a warning."""
    from ingest.documented_mixtures import load_mixture, register, seed_models

    m = load_mixture(file, model, source)
    r = register(state(ctx).lake, m, seed_models())
    if m.normalised:
        err_console.print(f"warning: the shares sum to {m.total_as_given:g}, not 1; stored each divided by "
                          f"{m.total_as_given:g}", markup=False, highlight=False, soft_wrap=True)
    what = f"replaced the earlier mixture (source: {r.replaced_source})" if r.replaced_source else "registered"
    console.print(f"{model}: documented mixture of {len(m.shares)} domains {what}; source: {m.source}",
                  markup=False, highlight=False, soft_wrap=True)
    for d, share in m.shares:
        console.print(f"  {d:<16} {100 * share:6.2f} %", markup=False, highlight=False)
    if r.seed_replaced:
        console.print(f"it replaces the seed's recipe of {model} (seeds/mixtures_documented.csv) in the marts",
                      markup=False, highlight=False, soft_wrap=True)
    if not r.n_matching_runs:
        console.print(f"note: no run of model {model} yet; fct_mixture_evaluation scores the runs whose model is "
                      f"{model} or ends in /{model.rsplit('/', 1)[-1]} (or var mixture_model_aliases)",
                      markup=False, highlight=False, soft_wrap=True)
    console.print("next: lmaudit build; lmaudit sql \"select * from fct_mixture_evaluation\"", markup=False)
