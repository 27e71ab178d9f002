"""Mixture recovery on sandbox models trained on known, different mixtures (issue 7, evaluation (b)).

    python benchmarks/sandbox_mixtures.py --warehouse /tmp/mixbench [--size tiny] [--n 300]
        [--mixtures balanced code-heavy docs-heavy] [--temperatures 1.0 0.7] [--n-boot 100] [--steps N]

For each mixture: `lmaudit sandbox build --mixture M` (the size's byte budget spread by the weights, documents
cut into equal pieces, no canary), N unconditional samples per temperature (transformers backend, top-p 1.0
at temperature 1.0, the PropMe default 0.7 / 0.95 otherwise). One frozen TF-IDF classifier, trained on
held-out reference documents of the four domains (files none of the corpora used), scores every run;
`lmaudit build` computes every estimator with bootstrap intervals and `fct_mixture_evaluation` scores them
against the sandbox's documented mixture (share of documents; the share of tokens is shown next to it).
Prints a markdown table for BENCHMARKS.md. With `--mia`, every model also scores the reference documents
(`lmaudit score --reference`: loss, zlib, Min-K%, Min-K%++) and LLMSurgeon's membership-inference
aggregation baselines (fct_mixture_mia_estimates) are placed beside the estimators.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import duckdb
import numpy as np


LLMSURGEON_PRESETS = {
    "llmsurgeon": "the llmsurgeon preset (the authors' 36 prompts x 10 cut to 300, one sample each, temperature 0.8, "
                  "top-p 0.9)",
    "neutral-prefixes": "the neutral-prefixes preset (lmaudit's 36 prefixes x 9 samples, temperature 0.8, top-p 0.9)",
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--warehouse", type=Path, required=True)
    ap.add_argument("--size", default="tiny")
    ap.add_argument("--mixtures", nargs="+", default=["balanced", "code-heavy", "docs-heavy"])
    ap.add_argument("--n", type=int, default=300, help="unconditional samples per run")
    ap.add_argument("--temperatures", type=float, nargs="+", default=[1.0, 0.7])
    ap.add_argument("--per-domain", type=int, default=150, help="reference documents per domain")
    ap.add_argument("--n-boot", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--steps", type=int, help="training steps (default: the size's)")
    ap.add_argument("--styles", nargs="*", default=[],
                    help="also a run per model with `--preset llmsurgeon --style S` for each style (Table 5), e.g. "
                         "instructional expository conversational coding")
    ap.add_argument("--mia", action="store_true", help="also the membership-inference aggregation baselines")
    ap.add_argument("--llmsurgeon", action="store_true",
                    help="also a run per model with `--preset llmsurgeon` (the authors' 36 prompts cut to 300, "
                         "temperature 0.8) and one with `--preset neutral-prefixes` (lmaudit's 36 prefixes x 9)")
    a = ap.parse_args()

    from ingest.build import build
    from ingest.classify.score import score_runs
    from ingest.classify.train import train_classifier
    from ingest.corpora import corpus_id_for
    from ingest.generate.backends import SamplingConfig, get_backend
    from ingest.generate.plan import prompt_units
    from ingest.generate.runner import RunSpec, run_generation
    from ingest.home import db_path
    from ingest.lake import Lake
    from ingest.prompts.build import build_prompt_set
    from ingest.references import import_references
    from ingest.sandbox.reference import held_out_documents, write_reference_jsonl
    from ingest.sandbox.register import build_and_register
    from ingest.sandbox.sizes import sandbox_size

    home = a.warehouse.resolve()
    lake = Lake(home)
    lake.init()
    t_all = time.perf_counter()
    timings: dict[str, float] = {}
    boxes = {}
    for m in a.mixtures:
        t = time.perf_counter()
        size = sandbox_size(a.size, m, steps=a.steps)
        paths, corpus = build_and_register(lake, home, size, a.seed, progress=False)
        boxes[m] = (paths, corpus)
        timings[f"sandbox {m}"] = time.perf_counter() - t
        log = json.loads(paths.train_log.read_text())
        print(f"sandbox {m}: {corpus}, built in {timings[f'sandbox {m}']:.0f}s; final loss {log.get('final_loss')}",
              flush=True)

    # one frozen classifier: reference documents from files that none of the corpora used
    t = time.perf_counter()
    first = boxes[a.mixtures[0]][0]
    refs = held_out_documents(first.size, first.corpus_jsonl, per_domain=a.per_domain, seed=a.seed,
                              exclude=[p.corpus_jsonl for p, _ in boxes.values()])
    ref_file = home / "sandbox-mixture-reference.jsonl"
    write_reference_jsonl(refs, ref_file)
    s = import_references(lake, ref_file, cap_per_domain=a.per_domain, folds=5, seed=a.seed,
                          source="sandbox-mixture-reference")
    tr = train_classifier(lake, backend="tfidf", name="sandbox-mixture-tfidf", seed=a.seed, progress=False)
    timings["reference + classifier"] = time.perf_counter() - t
    print(s.line(), "|", tr.line(), flush=True)

    truths = {}
    runs = []
    for m, (paths, corpus) in boxes.items():
        mix = json.loads(paths.mixture_json.read_text())
        truths[str(paths.model_dir)] = {
            basis: {d: v[basis] / sum(x[basis] for x in mix["domains"].values()) for d, v in mix["domains"].items()}
            for basis in ("docs", "tokens")}
        build_prompt_set(lake, corpus, "unconditional", n=1)
        be = get_backend("hf", str(paths.model_dir), batch_size=32, threads=1)
        max_new = int(json.loads((paths.model_dir / "config.json").read_text()).get("n_positions", 128)) - 1
        for temp in a.temperatures:
            t = time.perf_counter()
            sampling = SamplingConfig(temperature=temp, top_p=1.0 if temp == 1.0 else 0.95, max_new_tokens=max_new)
            units = prompt_units(lake, corpus, "unconditional", be, 1, a.n)
            spec = RunSpec(f"mix-{a.size}-{m}-t{temp:g}", str(paths.model_dir), "unconditional", "hf",
                           corpus_id_for(corpus), sampling)
            run_generation(lake, be, spec, units, progress=False)
            score_runs(lake, [spec.run_id], classifier="sandbox-mixture-tfidf", progress=False)
            timings[f"generate+score {m} t{temp:g}"] = time.perf_counter() - t
            runs.append((m, temp, spec.run_id, str(paths.model_dir)))
            print(f"{spec.run_id}: {a.n} samples of <= {max_new} tokens in {timings[f'generate+score {m} t{temp:g}']:.0f}s",
                  flush=True)
        if a.llmsurgeon:
            from ingest.generate.presets import get_preset

            for name in [*LLMSURGEON_PRESETS, *(f"llmsurgeon:{x}" for x in a.styles)]:
                preset, _, style = name.partition(":")
                p = get_preset(preset, style or None)
                setting = p.settings[0]
                t = time.perf_counter()
                build_prompt_set(lake, corpus, setting)
                spec = RunSpec(f"mix-{a.size}-{m}-{name.replace(':', '-')}", str(paths.model_dir), setting, "hf", corpus_id_for(corpus),
                               SamplingConfig(p.temperature, p.top_p, p.max_new_tokens), purpose=p.purpose)
                run_generation(lake, be, spec, prompt_units(lake, corpus, setting, be, p.n_samples, 0), progress=False)
                score_runs(lake, [spec.run_id], classifier="sandbox-mixture-tfidf", progress=False)
                timings[f"{name} preset {m}"] = time.perf_counter() - t
                runs.append((m, name, spec.run_id, str(paths.model_dir)))

    if a.mia:
        from ingest.score.run import ScoreJob, reference_items, score_items

        for m, (paths, _) in boxes.items():
            t = time.perf_counter()
            score_items(lake, ScoreJob(str(paths.model_dir), batch_size=16), reference_items(lake), "reference",
                        progress=False)
            timings[f"score references {m}"] = time.perf_counter() - t
            print(f"scored the reference documents under {m} in {timings[f'score references {m}']:.0f}s", flush=True)

    t = time.perf_counter()
    res = build(home, select=["path:models/staging", "path:models/intermediate/mixture", "path:models/marts/mixture",
                              "mixtures_documented"], progress=False,
                vars_=json.dumps({"mixture_bootstrap_resamples": a.n_boot}))
    timings["dbt build"] = time.perf_counter() - t
    if not res.success:
        raise SystemExit("dbt build failed: " + "; ".join(res.failures[:3]))

    with duckdb.connect(str(db_path(home)), read_only=True) as con:
        est = con.execute("""
            select run_id, estimator, domain, estimate, ci_low, ci_high from fct_mixture_estimates
            where estimate is not null and run_id is not null""").fetchall()  # mia_*: model-level, printed apart
        ev = {(r, e): (oa, mae) for r, e, oa, mae in con.execute(
            "select run_id, estimator, overlap_accuracy, mae from fct_mixture_evaluation").fetchall()}
        mia = con.execute("select model, estimator, domain, estimate from fct_mixture_mia_estimates "
                          "where estimate is not null").fetchall() if a.mia else []
    by_run: dict[tuple[str, str], dict[str, tuple[float, float, float]]] = {}
    for r, e, d, x, lo, hi in est:
        by_run.setdefault((r, e), {})[d] = (x, lo, hi)

    estimators = sorted({e for _, e in by_run}, key=lambda e: -np.mean([ev.get((x[2], e), (0, 0))[0] for x in runs]))
    print(f"\n{s.line()}\n{tr.line()}\n")
    for temp in a.temperatures + (list(LLMSURGEON_PRESETS) if a.llmsurgeon else []):
        what = (LLMSURGEON_PRESETS[temp] if temp in LLMSURGEON_PRESETS
                else f"Temperature {temp:g} (top-p {1.0 if temp == 1.0 else 0.95}), N = {a.n} per model")
        print(f"\n{what}. "
              "OA % against the share of documents (tokens in brackets); last column: 95% CI coverage of the "
              "document shares.\n")
        print("| estimator | " + " | ".join(a.mixtures) + " | mean | coverage |")
        print("|---|" + "---|" * (len(a.mixtures) + 2))
        for e in estimators:
            cells, oas, cov = [], [], []
            for m, tt, run_id, model in runs:
                if tt != temp:
                    continue
                got = by_run.get((run_id, e), {})
                oa_docs = ev.get((run_id, e), (float("nan"),))[0] * 100
                tok = truths[model]["tokens"]
                oa_tok = 100 * (1 - 0.5 * sum(abs(tok.get(d, 0) - got.get(d, (0,))[0]) for d in set(tok) | set(got)))
                cells.append(f"{oa_docs:.1f} ({oa_tok:.1f})")
                oas.append(oa_docs)
                docs = truths[model]["docs"]
                cov += [lo is not None and lo - 1e-12 <= docs.get(d, 0) <= hi + 1e-12 for d, (x, lo, hi) in got.items()]
            print(f"| {e} | " + " | ".join(cells) + f" | {np.mean(oas):.1f} | {100 * np.mean(cov):.0f}% |")
        print("\nPer domain (truth docs % / tokens % -> pacc, emq, direct):")
        for m, tt, run_id, model in runs:
            if tt != temp:
                continue
            parts = []
            for d in sorted(truths[model]["docs"]):
                vals = [by_run.get((run_id, e), {}).get(d, (float("nan"),))[0] * 100 for e in ("pacc", "emq", "direct")]
                parts.append(f"{d} {100 * truths[model]['docs'][d]:.1f}/{100 * truths[model]['tokens'][d]:.1f} -> "
                             + ", ".join(f"{v:.1f}" for v in vals))
            print(f"- {m}: " + "; ".join(parts))
    if a.mia:
        _print_mia(a.mixtures, boxes, truths, mia, runs, ev)
    if a.llmsurgeon:
        _print_styles(home, a.mixtures, boxes)
    print("\ntimings (s): " + ", ".join(f"{k} {v:.0f}" for k, v in timings.items())
          + f"; total {time.perf_counter() - t_all:.0f}")


def _print_styles(home, mixtures, boxes) -> None:
    """Table 5's shape from fct_mixture_prompt_styles: prompt styles x models, pacc and direct OA %."""
    from ingest.home import db_path, stored_model

    with duckdb.connect(str(db_path(home)), read_only=True) as con:
        rows = con.execute("select style, model, estimator, avg(overlap_accuracy) from fct_mixture_prompt_styles "
                           "where estimator in ('pacc', 'direct') group by all").fetchall()
    got = {(st, mo, e): oa for st, mo, e, oa in rows}
    print("\nPrompt styles (fct_mixture_prompt_styles; pacc / direct OA % against the share of documents):\n")
    print("| style | " + " | ".join(mixtures) + " | mean pacc |")
    print("|---|" + "---|" * (len(mixtures) + 1))
    for st in sorted({st for st, _, _ in got}):
        cells, oas = [], []
        for m in mixtures:
            model = stored_model(home, str(boxes[m][0].model_dir))  # runs name it relative to the warehouse
            pa, di = got.get((st, model, "pacc")), got.get((st, model, "direct"))
            cells.append("" if pa is None else f"{100 * pa:.1f} / {100 * (di or float('nan')):.1f}")
            oas += [100 * pa] if pa is not None else []
        print(f"| {st} | " + " | ".join(cells) + f" | {np.mean(oas) if oas else float('nan'):.1f} |")


def _print_mia(mixtures, boxes, truths, mia, runs, ev) -> None:
    """OA of the membership-inference aggregation baselines against the share of documents, beside pacc and
    direct on the same models (temperature 1.0 where sampled)."""
    est: dict[tuple[str, str], dict[str, float]] = {}
    for model, e, d, x in mia:
        est.setdefault((model, e), {})[d] = x
    print("\nMembership-inference aggregation (reference documents scored under each model; the default "
          "scoring and aggregation, the authors' scripts'; OA % against the share of documents):\n")
    print("| estimator | " + " | ".join(mixtures) + " | mean |")
    print("|---|" + "---|" * (len(mixtures) + 1))
    names = sorted({e for _, e in est}) + ["pacc", "direct"]
    for e in names:
        cells, oas = [], []
        for m in mixtures:
            model = str(boxes[m][0].model_dir)
            truth = truths[model]["docs"]
            if e.startswith("mia_"):
                got = est.get((model, e), {})
                oa = 100 * (1 - 0.5 * sum(abs(truth.get(d, 0) - got.get(d, 0)) for d in set(truth) | set(got)))
            else:
                run = next((r for mm, tt, r, _ in runs if mm == m and tt == 1.0), None)
                oa = ev.get((run, e), (float("nan"),))[0] * 100
            cells.append(f"{oa:.1f}")
            oas.append(oa)
        print(f"| {e} | " + " | ".join(cells) + f" | {np.mean(oas):.1f} |")


if __name__ == "__main__":
    main()
