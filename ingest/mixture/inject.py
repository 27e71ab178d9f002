"""`lmaudit mixture inject`: LLMSurgeon's toxic-injection study (Table 9) on the sandbox.

The paper trains GPT-2 on a fixed 7-domain mixture with 5, 10 or 20 % of the tokens replaced by toxic text
and checks that the estimate of the toxic share grows with the true share. The sandbox has no toxic text,
so one of its own domains plays the injected one: for every share s, a sandbox model is trained (`sandbox
build --mixture`, cached) on the base mixture scaled by 1 - s plus the injected domain at s. One classifier,
trained once on held-out reference documents of all domains (files none of the corpora used), frozen for
every model as in the paper ("without model-specific retuning"), classifies each model's unconditional
samples (the `neutral` preset's recipe); every estimator's estimate lands in `mixture_sweeps` as axis
`inject`, value s, `target_domain` the injected domain, and the truth is the model's documented mixture
(share of documents of its corpus). `fct_mixture_sweeps` and the report's Table 9 and figure read it.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ingest.errors import UserError
from ingest.lake import Lake, make_key
from ingest.mixture.sweep import (NEUTRAL, GridPoint, PointConfig, Sampler, TrainedClassifier, documented_truth,
                                  drop_spellings, former_spellings, load_references, point_config, point_done,
                                  point_partition, point_rows, take_over_spellings, train_point_classifier, TABLE)

DEFAULT_SHARES = (0.0, 0.05, 0.10, 0.20)  # the paper's 5, 10, 20 % and a control without the domain (CLI help)
# Training steps per model: the tiny mixture models imitate their data well enough for mixture recovery at
# 1200 steps, not at tiny's 420 (BENCHMARKS.md); at 420 a domain of 5-10 % is barely written at all and the
# estimate of the injected share was not monotonic, at 1200 it was.
DEFAULT_STEPS = 1200  # (the CLI's --help says so too)


def parse_shares(text: str) -> tuple[float, ...]:
    """`0,0.05,0.1` -> shares in [0, 1), distinct, at least two (a trend needs two points)."""
    out = []
    for part in text.split(","):
        part = part.strip()
        try:
            s = float(part)
        except ValueError:
            raise UserError(f"--shares: {part!r} is not a number; give shares in [0, 1) such as 0,0.05,0.1,0.2") from None
        if not 0 <= s < 1:
            raise UserError(f"--shares: {s:g} is outside [0, 1); give the injected domain's share of the training "
                            "text as a fraction, e.g. 0.05 for 5 %")
        out.append(s)
    if len(out) < 2:
        raise UserError("--shares: give at least two shares (e.g. 0,0.05,0.1,0.2)")
    if len(set(out)) != len(out):
        raise UserError(f"--shares: a share is given twice in {text!r}")
    return tuple(sorted(out))


@dataclass(frozen=True)
class InjectPlan:
    domain: str
    shares: tuple[float, ...]
    base: dict[str, float]  # the other domains' weights (normalised)
    size: str
    steps: int | None
    seed: int

    def mixture_spec(self, share: float) -> str:
        w = {d: (1 - share) * x for d, x in self.base.items()}
        w[self.domain] = share
        return ",".join(f"{d}={x:.6g}" for d, x in sorted(w.items()))


def make_plan(domain: str, shares: tuple[float, ...], base: str | None, size: str, steps: int | None,
              seed: int) -> InjectPlan:
    """Check the domain, the base mixture and that every share gets its own sandbox (name) before any work."""
    from ingest.sandbox.sizes import get_size, parse_mixture, sandbox_size

    domains = list(get_size(size).domain_budgets)
    if domain not in domains:
        raise UserError(f"--domain {domain!r} is not a sandbox domain; choose one of {', '.join(domains)}")
    if base is None:
        weights = {d: 1.0 for d in domains if d != domain}
    else:
        _, weights = parse_mixture(base)
        unknown = sorted(set(weights) - set(domains))
        if unknown:
            raise UserError(f"--base: unknown sandbox domain(s) {', '.join(unknown)}; choose from {', '.join(domains)}")
        if domain in weights:
            raise UserError(f"--base names the injected domain {domain!r}; give only the other domains' weights")
        if any(not (w >= 0) for w in weights.values()) or sum(weights.values()) <= 0:
            raise UserError("--base: weights must be non-negative numbers with a positive sum")
    z = sum(weights.values())
    plan = InjectPlan(domain, shares, {d: w / z for d, w in weights.items()}, size, steps, seed)
    names = [sandbox_size(size, plan.mixture_spec(s), steps=steps).name for s in shares]
    if len(set(names)) != len(names):
        raise UserError("--shares: two shares round to the same sandbox (shares are named by whole percent); "
                        "use shares at least 0.01 apart")
    return plan


def default_study(plan: InjectPlan) -> str:
    """inject-<domain>-<steps>steps, then -<size>, -seed<N> and -base<key> where they differ from the defaults
    (tiny, seed 0, the other domains equal): models of another training budget, size, seed or base mixture are
    another study, never mixed into one Table 9 (the first name stays what it was for the defaults)."""
    import hashlib

    from ingest.sandbox.sizes import get_size

    name = f"inject-{plan.domain}-{plan.steps or get_size(plan.size).steps}steps"
    if plan.size != "tiny":
        name += f"-{plan.size}"
    if plan.seed != 0:
        name += f"-seed{plan.seed}"
    others = sorted(plan.base)
    if any(abs(plan.base[d] - 1 / len(others)) > 1e-9 for d in others):
        key = ",".join(f"{d}={plan.base[d]:.6g}" for d in others)
        name += "-base" + hashlib.sha256(key.encode()).hexdigest()[:6]
    return name


@dataclass
class InjectResult:
    models: dict[float, str]
    computed: list[float]
    skipped: list[float]
    seconds: float
    timings: dict[str, float]


def run_inject(lake: Lake, home: Path, plan: InjectPlan, *, study: str | None = None, n_generations: int = NEUTRAL.n_generations,
               per_domain: int = 150, estimators: tuple[str, ...] = (), progress: bool = True,
               log: Callable[[str], None] = lambda s: None, vars_: dict | None = None) -> InjectResult:
    """Train (or reuse) one sandbox model per share, one frozen classifier, sample, estimate, write. `vars_`: the
    user's --vars (as for `lmaudit build`: aliases, estimators) over dbt_project.yml's."""
    from ingest.mixture.sweep import (changed_truth_vars, check_estimators, default_estimators, mixture_vars)
    from ingest.references import import_references
    from ingest.sandbox.reference import held_out_documents, write_reference_jsonl
    from ingest.sandbox.register import build_and_register
    from ingest.sandbox.sizes import sandbox_size

    t_all = time.perf_counter()
    timings: dict[str, float] = {}
    study = study or default_study(plan)
    estimators = check_estimators(estimators) if estimators else default_estimators(vars_)
    aliases = mixture_vars(vars_).get("mixture_model_aliases") or {}
    truth_vars = changed_truth_vars(vars_)
    boxes = {}
    for s in plan.shares:
        t = time.perf_counter()
        size = sandbox_size(plan.size, plan.mixture_spec(s), steps=plan.steps)
        boxes[s] = build_and_register(lake, home, size, plan.seed, progress=progress)
        timings[f"sandbox {s:g}"] = time.perf_counter() - t
        log(f"share {s:g}: {boxes[s][1]} ({timings[f'sandbox {s:g}']:.0f} s)")

    # one frozen classifier: held-out reference documents of every domain, from files no corpus used
    source = f"{study}-reference"
    top = boxes[max(plan.shares)][0]
    t = time.perf_counter()
    docs = held_out_documents(top.size, top.corpus_jsonl, per_domain=per_domain, seed=plan.seed,
                              exclude=[p.corpus_jsonl for p, _ in boxes.values()])
    ref_file = home / f"{source}.jsonl"
    write_reference_jsonl(docs, ref_file)
    # imported (deduped, capped, folds assigned as `reference import` does) into a scratch lake, not the
    # warehouse's: a later `classify train` there must not pick up the study's references unasked
    with tempfile.TemporaryDirectory() as scratch:
        import_references(Lake(scratch), ref_file, cap_per_domain=per_domain, folds=5, seed=plan.seed,
                          source=source)
        refs = load_references(Lake(scratch), None, [source])
    missing = sorted(set(top.size.domain_budgets) - set(refs.domains))
    if missing:
        raise UserError(f"no held-out reference documents of {', '.join(missing)}; use a larger --size")
    clf: TrainedClassifier | None = None
    ref_key = make_key(*refs.ids.tolist())
    base = PointConfig()  # tfidf, every reference document, the neutral preset's temperature
    computed, skipped, models = [], [], {}
    from ingest.home import stored_model

    for s in plan.shares:
        paths, corpus = boxes[s]
        # the model as its runs record it keys the points (relative: the same key after the warehouse moves, and
        # no row names its place); Sampler loads a relative key from this warehouse. Points keyed by the absolute
        # folder (before 2026-12-07), here or where the warehouse was moved from, are taken over, not redone.
        model = stored_model(home, str(paths.model_dir))
        models[s] = model
        former = sorted(({str(Path(paths.model_dir).resolve())} - {model})
                        | former_spellings(lake, study, model))
        point = GridPoint("inject", f"{s:g}", base)
        sampler = Sampler(model=model, corpus=corpus, n_generations=n_generations)
        params = {"plan": {"domain": plan.domain, "share": s, "mixture": plan.mixture_spec(s), "size": plan.size,
                           "steps": plan.steps, "seed": plan.seed}, "estimators": list(estimators),
                  "references": ref_key, "n_generations": n_generations, "backend": base.backend,
                  **({"truth_vars": truth_vars} if truth_vars else {})}
        config = point_config(params)
        part = point_partition(study, model, point)
        take_over_spellings(lake, study, model, former, point, params, lambda f: params)  # params omit the model
        if point_done(lake, part, config):
            skipped.append(s)
            continue
        t = time.perf_counter()
        if clf is None:
            clf = train_point_classifier(refs, base, seed=plan.seed, progress=progress)
            timings["classifier"] = time.perf_counter() - t
        t = time.perf_counter()
        run_id, texts = sampler.texts(lake, study + f"-{s:g}", base.temperature, -1.0, n_generations,
                                      progress=progress, former=former)
        nonempty = [x for x in texts if x.strip()]
        gen = clf.crossfit.posteriors(nonempty)
        documented, truth_source = documented_truth(lake, model, aliases)
        rows = point_rows(study=study, model=model, point=point, clf=clf, gen=gen, estimators=estimators,
                          documented=documented, truth_source=truth_source, run_id=run_id,
                          target_domain=plan.domain, params=params, seconds=time.perf_counter() - t, vars_=vars_)
        lake.write(TABLE, part, rows, meta={"config": config, "study": study, "axis": "inject", "value": point.value})
        drop_spellings(lake, study, former, point)
        timings[f"generate+estimate {s:g}"] = time.perf_counter() - t
        computed.append(s)
    return InjectResult(models, computed, skipped, time.perf_counter() - t_all, timings)
