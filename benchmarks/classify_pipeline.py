"""End-to-end check of the mixture pipeline on real local text: `python benchmarks/classify_pipeline.py`.

Three domains from files every installation has: Python stdlib source (code), pydoc topics
(documentation), license files of the installed packages (boilerplate). Source files are split between a
reference side and a pool side first (no file gives text to both), then cut into snippets. The reference
snippets go through `lmaudit reference import` and `classify train`; each trial draws a mixture alpha ~
Dirichlet(1), samples N pool snippets in those proportions as the "generations" of a run (documented
mixture = alpha, written to the lake as the sandbox would), `classify score` scores them, and `lmaudit
build` (mixture models only) gives fct_mixture_evaluation. Prints timings and a markdown table.
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import json
import os
import random
import tempfile
import time
from pathlib import Path

import numpy as np


def _sources() -> dict[str, list[str]]:
    code = [p.read_text(encoding="utf-8", errors="replace") for p in sorted(Path(os.__file__).parent.glob("*.py"))]
    import pydoc_data.topics as topics

    docs = [v for _, v in sorted(topics.topics.items())]
    licenses = set()
    for dist in md.distributions():
        for f in dist.files or []:
            if f.name.upper().startswith(("LICENSE", "LICENCE", "COPYING")):
                try:
                    licenses.add(Path(f.locate()).read_text(encoding="utf-8"))
                except (OSError, UnicodeDecodeError):
                    continue
    return {"code": code, "documentation": docs, "boilerplate": sorted(licenses)}


def corpus(chars: int, per_source: int, seed: int,
           split_sources: bool = True) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """(reference snippets, pool snippets) per domain. split_sources: every source file lands on one side only
    (the pool's text differs from the reference's within a domain, as a model's generations would); else
    the snippets of all files are split at random (label shift holds by construction)."""
    rng = random.Random(seed)
    ref, pool = {}, {}
    for domain, texts in _sources().items():
        texts = [t for t in texts if len(t) >= 2 * chars]
        rng.shuffle(texts)

        def snippets(part: list[str]) -> list[str]:
            out = []
            for t in part:
                for _ in range(per_source):
                    start = rng.randrange(0, len(t) - chars)
                    out.append(t[start:start + chars])
            return out

        if split_sources:
            half = len(texts) // 2
            ref[domain], pool[domain] = snippets(texts[:half]), snippets(texts[half:])
        else:
            s = snippets(texts)
            rng.shuffle(s)
            ref[domain], pool[domain] = s[: len(s) // 2], s[len(s) // 2:]
    return ref, pool


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chars", type=int, default=400, help="snippet length in characters")
    ap.add_argument("--per-source", type=int, default=3, help="snippets per source file")
    ap.add_argument("--cap", type=int, default=300, help="reference documents per domain")
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--n", type=int, default=300, help="generations per trial")
    ap.add_argument("--n-boot", type=int, default=50)
    ap.add_argument("--backend", default="tfidf")
    ap.add_argument("--param", action="append", default=[], help="backend parameter KEY=VALUE")
    ap.add_argument("--mix-sources", action="store_true",
                    help="split snippets, not source files, between reference and pool (no within-domain shift)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--home", type=Path, default=None)
    args = ap.parse_args(argv)

    import duckdb

    from ingest.build import build
    from ingest.classify import score_runs, train_classifier
    from ingest.home import db_path
    from ingest.importers.generations import import_generations
    from ingest.lake import Lake, make_key
    from ingest.references import import_references

    home = args.home or Path(tempfile.mkdtemp(prefix="mixture-bench-")) / "warehouse"
    lake = Lake(home)
    lake.init()
    ref, pool = corpus(args.chars, args.per_source, args.seed, split_sources=not args.mix_sources)
    work = home.parent
    with open(work / "refs.jsonl", "w", encoding="utf-8") as fh:
        for d, ts in ref.items():
            for t in ts:
                fh.write(json.dumps({"domain": d, "text": t}) + "\n")
    t0 = time.perf_counter()
    s = import_references(lake, work / "refs.jsonl", cap_per_domain=args.cap, folds=5, seed=args.seed)
    t_import = time.perf_counter() - t0
    params = {k: json.loads(v) if v[:1].isdigit() else v for k, v in (p.split("=", 1) for p in args.param)}
    t0 = time.perf_counter()
    tr = train_classifier(lake, backend=args.backend, name=args.backend, seed=args.seed, params=params, progress=False)
    t_train = time.perf_counter() - t0

    rng = np.random.default_rng(args.seed)
    domains = list(tr.domains)
    truths = {}
    t_score = 0.0
    for trial in range(args.trials):
        alpha = rng.dirichlet(np.ones(len(domains)))
        counts = rng.multinomial(args.n, alpha)
        texts = [t for d, c in zip(domains, counts) for t in rng.choice(pool[d], size=c, replace=True)]
        run = f"trial-{trial:03d}"
        f = work / f"{run}.jsonl"
        f.write_text("".join(json.dumps({"text": str(t), "sample_idx": i}) + "\n" for i, t in enumerate(texts)))
        import_generations(lake, f, run_id=run, model=f"bench-{run}", setting="unconditional")
        lake.write("mixtures_documented", f"bench--{run}", [
            {"mixture_id": make_key(f"bench-{run}", d), "model": f"bench-{run}", "domain": d,
             "weight": float(w), "source": "bench: Dirichlet(1) draw"} for d, w in zip(domains, alpha)])
        truths[run] = alpha
        t0 = time.perf_counter()
        score_runs(lake, [run], classifier=args.backend, progress=False)
        t_score += time.perf_counter() - t0

    t0 = time.perf_counter()
    res = build(home, select=["path:models/staging", "path:models/intermediate/mixture", "path:models/marts/mixture",
                              "mixtures_documented"], progress=False,
                vars_=json.dumps({"mixture_bootstrap_resamples": args.n_boot}))
    t_build = time.perf_counter() - t0
    if not res.success:
        raise SystemExit("dbt build failed: " + "; ".join(res.failures[:3]))
    with duckdb.connect(str(db_path(home)), read_only=True) as con:
        rows = con.execute("""
            select estimator, avg(overlap_accuracy) * 100, stddev_samp(overlap_accuracy) * 100, avg(mae), avg(r2)
            from fct_mixture_evaluation group by estimator order by avg(overlap_accuracy) desc""").fetchall()
        cover = con.execute("""
            select e.estimator, avg(case when m.share between e.ci_low and e.ci_high then 1.0 else 0.0 end) * 100,
                   avg(e.ci_high - e.ci_low)
            from fct_mixture_estimates as e
            inner join stg_runs as r on e.run_id = r.run_id
            inner join int_mixtures_documented as m on m.model = r.model and m.domain = e.domain
            group by e.estimator""").fetchall()
    cover = {e: (c, w) for e, c, w in cover}
    print(f"warehouse: {home}")
    print(f"references: {s.line()} [{t_import:.1f}s]")
    print(f"train: {tr.line()} [{t_train:.1f}s]")
    print(f"score: {args.trials} runs x {args.n} generations in {t_score:.1f}s; dbt build {t_build:.1f}s "
          f"({res.summary()})")
    print("\n| estimator | OA % (mean +- sd) | MAE | R^2 | 95% CI coverage | mean CI width |")
    print("|---|---|---|---|---|---|")
    for e, oa, sd, mae, r2 in rows:
        c, w = cover.get(e, (float("nan"), float("nan")))
        print(f"| {e} | {oa:.2f} +- {sd or 0:.1f} | {mae:.4f} | {r2:.3f} | {c:.0f}% | {w:.3f} |")


if __name__ == "__main__":
    main()
