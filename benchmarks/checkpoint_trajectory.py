"""Training trajectories: the mixture estimate and PropMe's headline metrics at every kept checkpoint of a
sandbox mixture model, against the truth (issue 15, item 4).

    python benchmarks/checkpoint_trajectory.py --warehouse /tmp/trajbench [--size tiny] [--mixture code-heavy]
        [--steps 1200] [--every 200] [--canary-copies 0] [--n 300] [--n-boot 100] [--out DIR]

`lmaudit sandbox build --mixture M --steps S --checkpoint-every E` keeps the model every E steps as its own
model folder; every checkpoint (and the final model) gets one unconditional run (N samples at temperature 1.0,
top-p 1.0, the mixture preset's sampling; the run records revision step<N>), traced against the sandbox index,
scored by one frozen TF-IDF classifier, and scores the reference documents (membership-inference baselines).
`lmaudit build` fills fct_mixture_trajectory and fct_propme_trajectory; the report's trajectory figure is
written to --out. Prints markdown tables for BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import duckdb


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--warehouse", type=Path, required=True)
    ap.add_argument("--size", default="tiny")
    ap.add_argument("--mixture", default="code-heavy")
    ap.add_argument("--steps", type=int, default=1200)
    ap.add_argument("--every", type=int, default=200)
    ap.add_argument("--canary-copies", type=int, default=0,
                    help="plant the canary this many times (a canary domain joins the mixture and the classifier)")
    ap.add_argument("--n", type=int, default=300, help="unconditional samples per checkpoint")
    ap.add_argument("--per-domain", type=int, default=150)
    ap.add_argument("--n-boot", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, help="folder for the trajectory figure (default: <warehouse>/report)")
    a = ap.parse_args()

    from ingest.build import build
    from ingest.checkpoints import list_checkpoints
    from ingest.classify.score import score_runs
    from ingest.classify.train import train_classifier
    from ingest.corpora import corpus_id_for, corpus_row
    from ingest.export import connect_marts
    from ingest.generate.backends import SamplingConfig, get_backend
    from ingest.generate.plan import prompt_units
    from ingest.generate.runner import RunSpec, run_generation
    from ingest.home import db_path
    from ingest.lake import Lake
    from ingest.lake.runs import run_texts
    from ingest.prompts.build import build_prompt_set
    from ingest.report.trajectory import trajectory_figure
    from ingest.sandbox.register import build_and_register, import_sandbox_references
    from ingest.sandbox.sizes import sandbox_size
    from ingest.score.run import ScoreJob, reference_items, score_items
    from ingest.trace.params import TraceParams
    from ingest.trace.run import TraceJob, trace_generations

    home = a.warehouse.resolve()
    lake = Lake(home)
    lake.init()
    timings: dict[str, float] = {}
    t_all = t = time.perf_counter()
    size = sandbox_size(a.size, a.mixture, canary_copies=a.canary_copies or None, steps=a.steps,
                        checkpoint_every=a.every)
    paths, corpus = build_and_register(lake, home, size, a.seed, progress=False)
    timings["sandbox (train with checkpoints)"] = time.perf_counter() - t
    log = json.loads(paths.train_log.read_text())
    print(f"sandbox {size.name}: {corpus}; final loss {log['final_loss']:.3f}; "
          f"{timings['sandbox (train with checkpoints)']:.0f}s", flush=True)

    t = time.perf_counter()
    s = import_sandbox_references(lake, paths, corpus, per_domain=a.per_domain, seed=a.seed)
    tr = train_classifier(lake, backend="tfidf", name="trajectory-tfidf", seed=a.seed, progress=False)
    build_prompt_set(lake, corpus, "unconditional", n=1)
    timings["references + classifier"] = time.perf_counter() - t
    print(s.line(), "|", tr.line(), flush=True)

    dirs = tuple(corpus_row(lake, corpus)["index_dirs"])
    job = TraceJob(dirs, TraceParams())
    for c in list_checkpoints(paths.model_dir):
        t = time.perf_counter()
        be = get_backend("hf", str(c.path), batch_size=32, threads=1)
        max_new = int(json.loads((c.path / "config.json").read_text()).get("n_positions", 128)) - 1
        spec = RunSpec(f"traj-{size.name}-step{c.step}", str(c.path), "unconditional", "hf", corpus_id_for(corpus),
                       SamplingConfig(temperature=1.0, top_p=1.0, max_new_tokens=max_new))
        run_generation(lake, be, spec, prompt_units(lake, corpus, "unconditional", be, 1, a.n), progress=False)
        trace_generations(lake, job, run_texts(lake, spec.run_id), f"run:{spec.run_id}",
                          corpus_id=corpus_id_for(corpus), progress=False)
        score_runs(lake, [spec.run_id], classifier="trajectory-tfidf", progress=False)
        score_items(lake, ScoreJob(str(c.path), batch_size=16), reference_items(lake), "reference", progress=False)
        timings[f"step {c.step}"] = time.perf_counter() - t
        print(f"step {c.step}: generate, trace, classify, score references in {timings[f'step {c.step}']:.0f}s",
              flush=True)

    t = time.perf_counter()
    res = build(home, progress=False, vars_=json.dumps({"mixture_bootstrap_resamples": a.n_boot,
                                                        "propme_bootstrap_resamples": 1000}))
    timings["dbt build"] = time.perf_counter() - t
    if not res.success:
        raise SystemExit("dbt build failed: " + "; ".join(res.failures[:3]))

    out = (a.out or home / "report").resolve()
    out.mkdir(parents=True, exist_ok=True)
    con = connect_marts(home)
    try:
        drawn = trajectory_figure(con, out / "trajectory.png")
    finally:
        con.close()
    print(f"figure: {out / 'trajectory.png' if drawn else 'not drawn'}")

    with duckdb.connect(str(db_path(home)), read_only=True) as con:
        mix = con.execute("""
            select step, estimator, any_value(overlap_accuracy), any_value(mae)
            from fct_mixture_trajectory group by all order by step, estimator""").fetchall()
        dom = con.execute("""
            select step, domain, truth, estimate from fct_mixture_trajectory where estimator = 'pacc'
            order by step, domain""").fetchall()
        pm = con.execute("""
            select step, metric, value, ci_low, ci_high from fct_propme_trajectory order by step, metric""").fetchall()
    steps = sorted({r[0] for r in mix})
    ests = ["pacc", "direct", "emq", "mia_loss", "mia_mink", "mia_minkpp", "mia_zlib"]
    oa = {(st, e): x for st, e, x, _ in mix}
    print(f"\nOverlap accuracy % against the share of documents, per checkpoint ({a.mixture}, N = {a.n}):\n")
    print("| estimator | " + " | ".join(f"step {st}" for st in steps) + " |")
    print("|---|" + "---|" * len(steps))
    for e in ests:
        if any((st, e) in oa for st in steps):
            print(f"| {e} | " + " | ".join("" if oa.get((st, e)) is None else f"{100 * oa[(st, e)]:.1f}"
                                           for st in steps) + " |")
    print("\npacc per domain (truth -> estimate, %): " + "; ".join(
        f"step {st}: " + ", ".join(f"{d} {100 * tr_:.1f}->{100 * (x or 0):.1f}" for s2, d, tr_, x in dom if s2 == st)
        for st in steps))
    print("\nPropMe headline metrics per checkpoint (95% bootstrap interval):\n")
    metrics = sorted({r[1] for r in pm})
    print("| metric | " + " | ".join(f"step {st}" for st in steps) + " |")
    print("|---|" + "---|" * len(steps))
    val = {(st, m): (v, lo, hi) for st, m, v, lo, hi in pm}
    for m in metrics:
        cells = []
        for st in steps:
            v, lo, hi = val.get((st, m), (None, None, None))
            cells.append("" if v is None else f"{v:.3g} [{lo:.3g}, {hi:.3g}]" if lo is not None else f"{v:.3g}")
        print(f"| {m} | " + " | ".join(cells) + " |")
    print("\nfinal loss per checkpoint: see train_log.json loss_curve; timings (s): "
          + ", ".join(f"{k} {v:.0f}" for k, v in timings.items()) + f"; total {time.perf_counter() - t_all:.0f}")


if __name__ == "__main__":
    main()
