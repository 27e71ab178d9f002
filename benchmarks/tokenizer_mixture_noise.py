"""bpe_merges, issue 35: the paper's LP against the noise-weighted LPs, side by side, on tokenizers of known mixture.

    python benchmarks/tokenizer_mixture_noise.py --out /tmp/tok35 [--n-boot 40] [--level 0.9] [--only NAME ...]
        [--methods paper noise-v1 noise] [--k K] [--report-only]

Tokenizers: the sweep of `tokenizer_mixture_scaling.py` (the sandbox's corpus builder and tokenizer trainer, byte
budgets T x weight, vocab 4096, seed 0), 0.33-16 MB of training text: balanced 4 x 25 % (0.33, 1 MB), code 70 /
headers 30 (0.33, 1, 4, 16 MB), code-heavy 70/10/10/10 (0.33, 1, 2 MB), docs-heavy 10/10/70/10 (0.33, 1 MB). The
0.33 MB balanced, code-heavy and docs-heavy ones are the sandbox's `--size tiny --mixture M` tokenizers (same
functions and seed: the same merge list). References: whole held-out files, T / (number of domains) bytes per
domain. Every method gets the same word table, merge replay and bootstrap seed (`estimate_tokenizer_mixture`,
`--n-boot` replicates, interval level `--level`).

Calibration is cross-fitted: a noise method's interval is z x k x bootstrap SD; k is fitted (the 90th
percentile of |error| / (z SD), so 90 % intervals cover 90 % of the fit set) on one group of mixtures and its
coverage measured on the OTHER group: group A = code/headers and code-heavy, group B = balanced and docs-heavy.
`--k`: also score the noise method with a k fitted elsewhere (benchmarks/tokenizer_mixture_calibration.py), for
which all of these tokenizers are out of sample. The noise methods' rows also keep the LP's own point
(`lp_point`), so the point estimators (LP point, mean of the replicates, bias-corrected 2 x point - mean) can be
compared on the same run. Prints JSON lines, then markdown tables for BENCHMARKS.md with CPU seconds and the load
average; `--report-only` re-prints the tables from OUT/noise_results.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from statistics import NormalDist

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tokenizer_mixture import build_tokenizer, truth  # noqa: E402

CONFIGS = [  # (label, weights, totals in MB, calibration group)
    ("balanced", {"code": .25, "boilerplate": .25, "documentation": .25, "headers": .25}, [0.33, 1], "B"),
    ("code/headers", {"code": .7, "headers": .3}, [0.33, 1, 4, 16], "A"),
    ("code-heavy", {"code": .7, "boilerplate": .1, "documentation": .1, "headers": .1}, [0.33, 1, 2], "A"),
    ("docs-heavy", {"code": .1, "boilerplate": .1, "documentation": .7, "headers": .1}, [0.33, 1], "B"),
]
METHODS = ("paper", "noise")  # noise-v1 is derived from the noise rows (`derive_v1`): the same replicates


def size_of(weights: dict, total: float, vocab: int = 4096):
    from ingest.sandbox.sizes import MIXTURE_CHUNK_BYTES, get_size

    tb = int(total * 1e6)
    budgets = {f"{d}_bytes": int(round(tb * weights.get(d, 0.0)))
               for d in ("code", "boilerplate", "documentation", "headers")}
    label = "-".join(f"{d}{round(100 * w)}" for d, w in weights.items())
    return get_size("tiny").replace(name=f"scale-{label}-{total:g}MB-v{vocab}", **budgets, max_file_bytes=40_000,
                                    chunk_bytes=MIXTURE_CHUNK_BYTES, canary_copies=0, vocab_size=vocab)


def fit_k(rows: list[dict], z: float, q: float) -> float:
    """The smallest k with |error| <= z k SD for a share q of the (tokenizer, domain) cases in `rows`."""
    r = [abs(e) / (z * s) for row in rows for e, s in zip(row["err"], row["sd"]) if s and s > 0]
    return float(np.quantile(r, q)) if r else float("nan")


def covered(rows: list[dict], z: float, k: float) -> tuple[int, int]:
    hits = [abs(e) <= z * k * s for row in rows for e, s in zip(row["err"], row["sd"]) if s is not None]
    return int(sum(hits)), len(hits)


def main() -> None:
    from ingest.mixture.tokenizer import ReferenceText, estimate_tokenizer_mixture, load_bpe, replay, word_table
    from ingest.sandbox.reference import held_out_documents

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--n-boot", type=int, default=40)
    ap.add_argument("--level", type=float, default=0.9)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", nargs="*", default=None, help="only these tokenizer names (scale-...)")
    ap.add_argument("--methods", nargs="+", default=list(METHODS))
    ap.add_argument("--k", type=float, default=None, help="a k fitted on other tokenizers, to score here")
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args()
    if args.report_only:
        report(json.loads((args.out / "noise_results.json").read_text()), args.level, args.k, args.methods)
        return
    load0 = Path("/proc/loadavg").read_text().split()[:3]
    t_all = time.perf_counter()
    results = []
    for label, weights, totals, group in CONFIGS:
        for total in totals:
            size = size_of(weights, total)
            if args.only and size.name not in args.only:
                continue
            corpus_jsonl, tok_json = build_tokenizer(size, args.out / size.name, args.seed)
            tok = load_bpe(tok_json)
            tr = truth(corpus_jsonl)["bytes"]
            docs = held_out_documents(size, corpus_jsonl, per_domain=10**9, pieces_per_file=0,
                                      bytes_per_domain=int(total * 1e6 / len(weights)), seed=args.seed)
            refs = [ReferenceText(d.domain, d.text, d.id) for d in docs]
            c0 = time.process_time()
            table = word_table(tok, refs)
            log = replay(table.symbols, tok.merges, tok.merged)
            prep = time.process_time() - c0
            for method in args.methods:
                c0, w0 = time.process_time(), time.perf_counter()
                est = estimate_tokenizer_mixture(tok, refs, method=method, n_boot=args.n_boot, seed=args.seed,
                                                 level=args.level, log=log)
                t = np.array([tr[d] for d in est.domains])
                t = t / t.sum()  # renormalised over the domains that have reference text (as `errors` does)
                err = est.estimate - t
                sd = est.params.get("bootstrap_sd")
                row = dict(mixture=label, total_mb=total, group=group, name=size.name, method=method,
                           missing=sorted(set(tr) - set(est.domains)),
                           domains=list(est.domains), truth=t.round(4).tolist(), est=est.estimate.round(4).tolist(),
                           err=err.tolist(), mae=float(np.abs(err).mean()), sd=sd,
                           ci=[[float(a), float(b)] for a, b in zip(est.ci_low, est.ci_high)],
                           cover=int(np.sum((est.ci_low <= t) & (t <= est.ci_high))), n=len(t),
                           merges=est.n_merges_used, ref_mb=sum(est.n_bytes.values()) / len(t) / 1e6,
                           cpu_s=time.process_time() - c0 + prep, wall_s=time.perf_counter() - w0,
                           spread=est.params.get("spread_by_merges"), lp_point=est.params.get("lp_point"),
                           training_scale=est.params.get("training_scale"),
                           doc_mean=est.params.get("document_mean"), doc_sd=est.params.get("document_sd"))
                results.append(row)
                print(json.dumps(row), flush=True)
            (args.out / ("noise_results-only.json" if args.only else "noise_results.json")).write_text(
                json.dumps(results, indent=1))
    load1 = Path("/proc/loadavg").read_text().split()[:3]
    print(f"\nload average before {' '.join(load0)}, after {' '.join(load1)}; {time.perf_counter() - t_all:.0f}s; "
          f"{os.cpu_count()} CPUs; --n-boot {args.n_boot}, level {args.level}\n")
    report(results, args.level, args.k, args.methods)


def corrected(row: dict) -> np.ndarray:
    """2 x the LP point - the mean of the replicates, clipped at 0 and renormalised (bootstrap bias correction)."""
    c = np.clip(2 * np.array(row["lp_point"]) - np.array(row["est"]), 0, None)
    return c / c.sum()


def derive_v1(results: list[dict], z: float) -> list[dict]:
    """The first noise method's row from each noise row: the noise method computes it on the way (the mean and SD
    of its document replicates at the same merges, seed and LP), scored with its k = 4.8."""
    out = []
    for r in results:
        if r["method"] != "noise" or r.get("doc_mean") is None:
            continue
        t, e, sd = np.array(r["truth"]), np.array(r["doc_mean"]), np.array(r["doc_sd"])
        lo, hi = e - z * 4.8 * sd, e + z * 4.8 * sd
        out.append(dict(r, method="noise-v1", est=e.round(4).tolist(), err=(e - t).tolist(), mae=float(np.abs(e - t).mean()),
                        sd=sd.tolist(), cover=int(np.sum((lo <= t) & (t <= hi))), lp_point=None, cpu_s=0.0))
    return out


def report(results: list[dict], level: float, k_ext: float | None, methods) -> None:
    results = results + derive_v1(results, NormalDist().inv_cdf((1 + level) / 2))
    methods = [m for m in methods if m != "noise"] + ["noise-v1", "noise"] if "noise" in methods else methods
    by = {(r["name"], r["method"]): r for r in results}
    names = list(dict.fromkeys(r["name"] for r in results))
    skipped = [nm for nm in names if by[(nm, methods[0])]["missing"]]
    for nm in skipped:
        print(f"not in the means nor the calibration: {nm} has no held-out reference text of "
              f"{', '.join(by[(nm, methods[0])]['missing'])} (the domain's pool is used up)")
    names = [nm for nm in names if nm not in skipped and all((nm, m) in by for m in methods)]
    print("| mixture | training MB | ref MB / domain | " + " | ".join(f"{m} MAE | {m} cover" for m in methods)
          + " | CPU s " + " / ".join(methods) + " |")
    print("|---" * (3 + 2 * len(methods) + 1) + "|")
    for nm in names:
        p = by[(nm, methods[0])]
        print(f"| {p['mixture']} | {p['total_mb']:g} | {p['ref_mb']:.2f} | " + " | ".join(
            f"{by[(nm, m)]['mae']:.4f} | {by[(nm, m)]['cover']}/{by[(nm, m)]['n']}" for m in methods)
            + " | " + " / ".join(f"{by[(nm, m)]['cpu_s']:.0f}" for m in methods) + " |")
    for m in methods:
        rs = [by[(nm, m)] for nm in names]
        c = sum(r["cover"] for r in rs)
        n = sum(r["n"] for r in rs)
        extra = ""
        if rs and rs[0].get("lp_point"):
            lp = np.mean([np.abs(np.array(r["lp_point"]) - np.array(r["truth"])).mean() for r in rs])
            bc = np.mean([np.abs(corrected(r) - np.array(r["truth"])).mean() for r in rs])
            extra = f"; MAE of the LP point {lp:.4f}, bias-corrected (2 x point - mean) {bc:.4f}"
        print(f"\n{m}: mean MAE {np.mean([r['mae'] for r in rs]):.4f} over {len(rs)} tokenizers{extra}; "
              f"coverage of {100 * level:.0f} % intervals {c}/{n} = {100 * c / max(n, 1):.0f} %; "
              f"CPU {sum(r['cpu_s'] for r in rs):.0f} s")
    z = NormalDist().inv_cdf((1 + level) / 2)
    for m in methods:
        if m == "paper":
            continue
        noise = [by[(nm, m)] for nm in names]
        print(f"\ncross-fitted calibration of {m}:")
        for fit, test in (("A", "B"), ("B", "A")):
            k = fit_k([r for r in noise if r["group"] == fit], z, level)
            h, n = covered([r for r in noise if r["group"] == test], z, k)
            h0, n0 = covered([r for r in noise if r["group"] == test], z, 1.0)
            print(f"  k fitted on group {fit}: {k:.2f}; coverage on group {test}: {h}/{n} = {100 * h / max(n, 1):.0f} % "
                  f"(k = 1: {h0}/{n0})")
        print(f"  k fitted on all: {fit_k(noise, z, level):.2f}")
        if k_ext is not None and m == "noise":
            h, n = covered(noise, z, k_ext)
            print(f"  k = {k_ext:g} fitted on other tokenizers: {h}/{n} = {100 * h / max(n, 1):.0f} % (out of sample)")


if __name__ == "__main__":
    main()
