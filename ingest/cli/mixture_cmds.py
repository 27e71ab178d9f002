"""`lmaudit mixture tokenizer`: the training mixture read from a BPE tokenizer's merge list (bpe_merges);
`lmaudit mixture documented add`: a model's documented mixture, the truth `fct_mixture_evaluation` scores against."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ingest.cli.context import console, err_console, state
from ingest.generate.presets import PRESETS

_NEUTRAL_N = PRESETS["neutral"].n_generations

app = typer.Typer(help="More mixture estimates: from a tokenizer's merges (no generations), LLMSurgeon's sweeps "
                       "and injection (these generate); documented mixtures.",
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
    model: Annotated[Optional[str], typer.Option("--model", help="Model key to file the estimate under (default: the tokenizer's folder; relative to the warehouse when inside it, as runs and mixtures_documented name it).")] = None,
    method: Annotated[str, typer.Option("--method", help="noise (default): constraints weighed by their bootstrap standard error, merges chosen from the data, bias-corrected point, interval from resampled reference files and the training sample; paper: Hayase et al.'s LP over the first 300 merges; noise-v1: the first noise method.")] = "noise",
    training_mb: Annotated[Optional[float], typer.Option("--training-mb", help="MB of text the tokenizer was trained on, if known (the noise method's interval draws a training sample of that size; default: as much as the reference text; inf: reference sampling only).")] = None,
    max_merges: Annotated[Optional[int], typer.Option("--max-merges", help="Use only the first N merges; 0 = all; default: the method's (paper 300, noise chosen from the data).")] = None,
    step_slack_only: Annotated[bool, typer.Option("--step-slack-only", help="Relax the LP per merge step only, without the paper's slack per pair.")] = False,
    n_boot: Annotated[int, typer.Option("--n-boot", help="Bootstrap replicates over reference documents.")] = 100,
    seed: Annotated[int, typer.Option("--seed", help="Bootstrap seed.")] = 0,
    ci_level: Annotated[float, typer.Option("--ci-level", help="Interval level.")] = 0.95,
    top_k: Annotated[int, typer.Option("--top-k", help="Most violated pairs added per merge step and LP round.")] = 5,
) -> None:
    """Estimate the training mixture from the tokenizer's merge list (Hayase et al.'s LP).

    Replay the tokenizer's merges on each domain's reference text and solve Hayase et al.'s LP for the
    mixture that makes every merge the most frequent pair; write it to tokenizer_mixture_estimates."""
    from ingest.errors import UserError
    from ingest.mixture.tokenizer import estimate_tokenizer_mixture, get_method, load_bpe
    from ingest.mixture.tokenizer.store import (estimate_rows, file_references, lake_references, model_key,
                                                write_estimate)

    if n_boot < 0 or not 0 < ci_level < 1 or top_k < 1 or (max_merges is not None and max_merges < 0):
        raise UserError("--n-boot must be >= 0, --ci-level in (0, 1), --top-k >= 1 and --max-merges >= 0 (0 = all)")
    if training_mb is not None and not training_mb > 0:
        raise UserError("--training-mb must be > 0 (inf: reference sampling only)")
    get_method(method)
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
    est = estimate_tokenizer_mixture(tok, docs, method=method, max_merges=max_merges, n_boot=n_boot, seed=seed,
                                     level=ci_level, top_k=top_k, pair_slack=not step_slack_only,
                                     training_bytes=None if training_mb is None else training_mb * 1e6)
    key = model_key(tokenizer_path, model, lake.home)
    write_estimate(lake, estimate_rows(est, key, str(tok.path), source))
    s = est.solution
    console.print(f"bpe_merges ({est.method}) for {key}: {est.n_merges_used} merges, {sum(est.n_docs.values())} reference "
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


def _split(text: Optional[str]) -> Optional[list[str]]:
    return None if text is None else [x.strip() for x in text.split(",") if x.strip()]


def _print_points(rows_by_point: list[tuple[str, str, dict[str, float | None], bool, float]],
                  estimators: tuple[str, ...]) -> None:
    """One line per grid point: overlap accuracy % of each estimator against the documented mixture."""
    shown = [e for e in ("pacc", "direct", "emq", "llmsurgeon_code") if e in estimators] or list(estimators)[:4]
    console.print(f"{'axis':<12} {'value':<32} " + " ".join(f"{e:>15}" for e in shown) + "   seconds",
                  markup=False, highlight=False, soft_wrap=True)
    for axis, value, oa, cached, secs in rows_by_point:
        cells = " ".join(f"{'-' if oa.get(e) is None else f'{100 * oa[e]:.1f}':>15}" for e in shown)
        tail = "  (done before)" if cached else f"  {secs:7.1f}"
        console.print(f"{axis:<12} {value[:32]:<32} {cells}{tail}", markup=False, highlight=False, soft_wrap=True)


@app.command("sweep")
def sweep(
    ctx: typer.Context,
    axis: Annotated[Optional[list[str]], typer.Option("--axis", help="NAME=V1,V2,... (repeat for more axes): reference (documents per domain, Table 4), backend (tfidf, transformer, transformer:PATH of a pretrained encoder; Table 3), granularity (fine, or groups such as code+headers/boilerplate+documentation), temperature, generations. One factor varies at a time around the base.")] = None,
    run: Annotated[Optional[str], typer.Option("--run", help="Classify this existing run's samples (its model is the model swept).")] = None,
    model: Annotated[Optional[str], typer.Option("--model", help="Sample this model (a local folder, e.g. the sandbox's <warehouse>/sandbox/<size>-seed<n>/model) instead of --run.")] = None,
    corpus: Annotated[Optional[str], typer.Option("--corpus", help="The corpus whose unconditional prompt is sampled (with --model, or with --run for a temperature axis).")] = None,
    n: Annotated[int, typer.Option("--n", help="Samples of the base run when the sweep samples the model (the neutral preset's).")] = _NEUTRAL_N,
    max_new_tokens: Annotated[Optional[int], typer.Option("--max-new-tokens", help="New tokens per sample (default: the neutral preset's, cut to the model's context).")] = None,
    domains: Annotated[Optional[str], typer.Option("--domains", help="Comma-separated reference domains (default: all).")] = None,
    reference_source: Annotated[Optional[str], typer.Option("--reference-source", help="Comma-separated reference_docs sources to use (default: all).")] = None,
    estimators: Annotated[Optional[str], typer.Option("--estimators", help="Comma-separated estimators (default: var mixture_estimators of dbt_project.yml).")] = None,
    study: Annotated[Optional[str], typer.Option("--study", help="Name of the sweep (default: the model's folder name); a rerun with the same name resumes it.")] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the classifiers and the reference subsets.")] = 0,
    vars_: Annotated[Optional[str], typer.Option("--vars", help="dbt vars as for lmaudit build (YAML), e.g. '{mixture_model_aliases: {/models/OLMo-1B-hf: OLMo-1B}}': the stored truth and default estimators follow them.")] = None,
) -> None:
    """LLMSurgeon's ablations (Tables 3, 4): the mixture estimate over a grid of settings.

    LLMSurgeon's ablations on one model and reference set: each grid point trains a classifier with the
    `classify train` protocol, classifies the samples and runs every estimator; rows go to mixture_sweeps
    (resumable), fct_mixture_sweeps scores them, `lmaudit report` draws Tables 3 and 4."""
    from ingest.errors import UserError
    from ingest.mixture.sweep import (PointConfig, Sampler, SweepSpec, check_estimators, overlap_by_estimator,
                                      parse_grid, run_sweep)
    from ingest.names import check_name

    from ingest.build_vars import check_vars

    given_vars = check_vars(vars_)
    axes = parse_grid(axis)
    if (run is None) == (model is None):
        raise UserError("give exactly one of --run (classify an existing run) or --model with --corpus (sample it)")
    if n < 1:
        raise UserError(f"--n must be >= 1, got {n}")
    lake = state(ctx).lake
    if run is not None:
        rows = [r for r in lake.read("runs").to_pylist() if r["run_id"] == run]
        if not rows:
            raise UserError(f"unknown run {run!r}; list runs with lmaudit sql \"select run_id from stg_runs\"")
        # the model as the run records it keys the sweep (a relative one is the same wherever the warehouse
        # lies); Sampler loads it from this warehouse (model_location) when a point samples it again
        sampler = Sampler(model=rows[0]["model"], run_id=run, corpus=corpus, max_new_tokens=max_new_tokens)
        base = PointConfig(temperature=float(rows[0]["temperature"] or 1.0))  # the run's own temperature
    else:
        if corpus is None:
            raise UserError("--model samples the model: give --corpus (e.g. the sandbox's sandbox-tiny-...)")
        if not Path(model).is_dir():
            raise UserError(f"--model {model}: not a folder; give the model's local folder")
        from ingest.home import stored_model

        # the folder as runs record it keys the sweep (relative inside the warehouse: the same key after a move,
        # and no row names its place); Sampler loads a relative key from this warehouse (model_location)
        sampler = Sampler(model=stored_model(lake.home, model), corpus=corpus, n_generations=n,
                          max_new_tokens=max_new_tokens)
        base = PointConfig(temperature=PRESETS["neutral"].temperature)
    ests = check_estimators(_split(estimators)) if estimators is not None else ()
    folder = Path(sampler.model)
    name = check_name("study name", study or (folder.parent.name if folder.name == "model" else folder.name))
    spec = SweepSpec(study=name, axes=axes, base=base, estimators=ests, seed=seed)
    printed = []

    def show(p, rows, cached):
        printed.append((p.axis, p.value, overlap_by_estimator(rows), cached,
                        max((r["seconds"] or 0 for r in rows), default=0.0)))

    # a --model sweep keyed its points by the folder's absolute path before: those points are taken over, not redone
    formerly = None if model is None else str(Path(model).resolve())
    res = run_sweep(lake, spec, sampler, domains=_split(domains), sources=_split(reference_source), on_point=show,
                    vars_=given_vars, formerly=formerly)
    console.print(f"mixture sweep {name!r} of {sampler.model}: {len(res.points)} grid points, {len(res.computed)} "
                  f"computed, {len(res.skipped)} done before, {res.seconds:.0f} s; overlap accuracy % against the "
                  "documented mixture:", markup=False, highlight=False, soft_wrap=True)
    _print_points(printed, spec.estimators or tuple(sorted({e for _, _, oa, _, _ in printed for e in oa})))
    console.print("next: lmaudit build; lmaudit sql \"select * from fct_mixture_sweeps\"; lmaudit report",
                  markup=False, soft_wrap=True)


@app.command("inject")
def inject(
    ctx: typer.Context,
    domain: Annotated[str, typer.Option("--domain", help="The sandbox domain injected at known shares (code, boilerplate, documentation, headers).")] = "boilerplate",
    shares: Annotated[Optional[str], typer.Option("--shares", help="Comma-separated shares of the injected domain in the training text (default 0,0.05,0.1,0.2: the paper's 5/10/20 % and a control without it).")] = None,
    base: Annotated[Optional[str], typer.Option("--base", help="The other domains' mixture, e.g. code=0.5,documentation=0.3,boilerplate=0.2 (default: equal).")] = None,
    size: Annotated[str, typer.Option("--size", help="Sandbox size (tiny: minutes).")] = "tiny",
    steps: Annotated[Optional[int], typer.Option("--steps", help="Training steps per model (default 1200: the tiny mixture models imitate their data at 1200 steps, not at tiny's 420; BENCHMARKS.md).")] = None,
    n: Annotated[int, typer.Option("--n", help="Unconditional samples per model (the neutral preset's).")] = _NEUTRAL_N,
    per_domain: Annotated[int, typer.Option("--per-domain", help="Held-out reference documents per domain for the frozen classifier.")] = 150,
    estimators: Annotated[Optional[str], typer.Option("--estimators", help="Comma-separated estimators (default: var mixture_estimators).")] = None,
    study: Annotated[Optional[str], typer.Option("--study", help="Name of the study (default inject-<domain>-<steps>steps, then -<size>, -seed<N>, -base<key> where they are not the defaults).")] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the sandboxes, reference documents and classifier.")] = 0,
    vars_: Annotated[Optional[str], typer.Option("--vars", help="dbt vars as for lmaudit build (YAML), e.g. '{mixture_model_aliases: {/models/OLMo-1B-hf: OLMo-1B}}': the stored truth and default estimators follow them.")] = None,
) -> None:
    """LLMSurgeon's toxic injection (Table 9) on the sandbox: is an injected share found?

    LLMSurgeon's toxic injection (Table 9) on the sandbox: one model per share of an injected domain
    (cached), one frozen classifier, the estimate of the injected share beside the truth; rows go to
    mixture_sweeps (axis inject), fct_mixture_sweeps scores them, `lmaudit report` draws Table 9 and its figure."""
    from ingest.errors import UserError
    from ingest.mixture.inject import (DEFAULT_SHARES, DEFAULT_STEPS, default_study, make_plan, parse_shares,
                                       run_inject)
    from ingest.mixture.sweep import check_estimators

    if n < 1 or per_domain < 5:
        raise UserError("--n must be >= 1 and --per-domain >= 5 (the cross-fitting folds)")
    from ingest.build_vars import check_vars

    given_vars = check_vars(vars_)
    ests = check_estimators(_split(estimators)) if estimators is not None else ()
    shares_ = DEFAULT_SHARES if shares is None else parse_shares(shares)
    plan = make_plan(domain, shares_, base, size, DEFAULT_STEPS if steps is None else steps, seed)
    st = state(ctx)
    res = run_inject(st.lake, st.home, plan, study=study, n_generations=n, per_domain=per_domain, estimators=ests,
                     log=lambda s: console.print(s, markup=False, highlight=False), vars_=given_vars)
    name = study or default_study(plan)
    rows = [r for r in st.lake.read("mixture_sweeps").to_pylist()
            if r["study"] == name and r["axis"] == "inject" and r["domain"] == domain]
    console.print(f"injected {domain}: {len(res.computed)} models estimated, {len(res.skipped)} done before, "
                  f"{res.seconds:.0f} s. True share -> estimated share (%):", markup=False, highlight=False)
    shown = [e for e in ("pacc", "direct", "emq") if e in {r["estimator"] for r in rows}]
    console.print(f"{'share':>8} {'truth':>8} " + " ".join(f"{e:>8}" for e in shown), markup=False)
    for s in plan.shares:
        got = {r["estimator"]: r for r in rows if r["value"] == f"{s:g}"}
        truth = next((r["truth"] for r in got.values()), None)
        vals = [(got.get(e) or {}).get("estimate") for e in shown]
        cells = " ".join(f"{'-' if v is None else f'{100 * v:.1f}':>8}" for v in vals)
        console.print(f"{100 * s:8.1f} {'-' if truth is None else f'{100 * truth:.1f}':>8} {cells}", markup=False)
    console.print("next: lmaudit build; lmaudit sql \"select * from fct_mixture_sweeps where axis = 'inject'\"; "
                  "lmaudit report", markup=False)
