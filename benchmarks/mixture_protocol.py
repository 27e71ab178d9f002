"""Protocol sweep for the mixture estimators (docs/mixture-method.md section 5; known mixtures of reference documents).

For each dataset: a multinomial logistic regression is cross-fitted (5 folds) on a labelled reference set,
so every reference document has a posterior from a model that did not train on it; a final model trained
on the whole reference set scores a held-out pool. Each trial draws a mixture alpha ~ Dirichlet(1), draws
N "generations" from the pool with those domain proportions (sampling per domain with replacement), and
asks every estimator for pi. Reported: mean overlap accuracy, MAE (= AE, mean |alpha - pi| over domains),
mean R^2 across domains; and, on a subset of trials, the coverage of the 90% bootstrap interval (bootstrap
over generations and reference documents).

Datasets (all offline):
- gauss-easy / gauss-hard: K = 6 Gaussian class-conditionals in 8 dimensions (mean spread 1.6 / 1.0),
  500 reference documents per domain, a pool of 5,000 per domain.
- digits: scikit-learn's 8x8 digits (1,797 images) grouped into K = 5 domains {0,1}, {2,3}, ..., reduced to
  4 PCA components so that domains overlap like text domains do; half reference, half pool.

    python benchmarks/mixture_protocol.py [--trials 100] [--n 300 1000] [--coverage-trials 20] [--write]

`--write` replaces the section "## Mixture estimators (protocol sweep)" of BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import platform
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ingest.mixture import MixtureInputs, estimate, get_estimator, list_estimators, metrics  # noqa: E402

SECTION = "## Mixture estimators (protocol sweep)"


@dataclass
class Dataset:
    name: str
    domains: tuple[str, ...]
    ref_posteriors: np.ndarray
    ref_labels: np.ndarray
    ref_folds: np.ndarray
    pool_posteriors: np.ndarray
    pool_labels: np.ndarray
    note: str

    def sample(self, rng: np.random.Generator, alpha: np.ndarray, n: int) -> np.ndarray:
        counts = rng.multinomial(n, alpha)
        idx = [rng.choice(np.flatnonzero(self.pool_labels == d), size=c, replace=True)
               for d, c in enumerate(counts) if c]
        return self.pool_posteriors[np.concatenate(idx)]

    def inputs(self, gen: np.ndarray) -> MixtureInputs:
        return MixtureInputs(domains=self.domains, ref_posteriors=self.ref_posteriors, ref_labels=self.ref_labels,
                             ref_folds=self.ref_folds, gen_posteriors=gen)


def _crossfit(x_ref, y_ref, x_pool, y_pool, k, name, note, seed=0) -> Dataset:
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold

    post = np.empty((y_ref.shape[0], k))
    folds = np.empty(y_ref.shape[0], dtype=int)
    for f, (tr, te) in enumerate(StratifiedKFold(5, shuffle=True, random_state=seed).split(x_ref, y_ref)):
        post[te] = LogisticRegression(max_iter=3000).fit(x_ref[tr], y_ref[tr]).predict_proba(x_ref[te])
        folds[te] = f
    model = LogisticRegression(max_iter=3000).fit(x_ref, y_ref)
    pool = model.predict_proba(x_pool)
    acc = float((pool.argmax(1) == y_pool).mean())
    return Dataset(name, tuple(f"d{i}" for i in range(k)), post, y_ref, folds, pool, y_pool,
                   f"{note}; pool accuracy {acc:.3f}")


def gaussian(name: str, separation: float, seed: int) -> Dataset:
    rng = np.random.default_rng(seed)
    k, dim = 6, 8
    means = rng.normal(0, separation, (k, dim))

    def draw(n):
        return (np.vstack([rng.normal(means[d], 1.0, (n, dim)) for d in range(k)]), np.repeat(np.arange(k), n))

    x_ref, y_ref = draw(500)
    x_pool, y_pool = draw(5000)
    return _crossfit(x_ref, y_ref, x_pool, y_pool, k, name, f"K=6 Gaussians, spread {separation}")


def digits(seed: int = 0) -> Dataset:
    from sklearn.datasets import load_digits
    from sklearn.decomposition import PCA
    from sklearn.model_selection import train_test_split

    d = load_digits()
    y = d.target // 2
    x_ref, x_pool, y_ref, y_pool = train_test_split(d.data, y, test_size=0.5, stratify=y, random_state=seed)
    pca = PCA(4, random_state=seed).fit(x_ref)
    return _crossfit(pca.transform(x_ref), y_ref, pca.transform(x_pool), y_pool, 5, "digits",
                     "load_digits as 5 domains of digit pairs, PCA-4")


def sweep(ds: Dataset, names, trials: int, n: int, seed: int) -> dict[str, dict[str, float]]:
    rng = np.random.default_rng(seed)
    res = {name: {"oa": [], "mae": [], "r2": []} for name in names}
    secs = {name: 0.0 for name in names}
    for _ in range(trials):
        alpha = rng.dirichlet(np.ones(len(ds.domains)))
        inp = ds.inputs(ds.sample(rng, alpha, n))
        for name in names:
            t = time.perf_counter()
            pi = get_estimator(name).estimate(inp)
            secs[name] += time.perf_counter() - t
            res[name]["oa"].append(metrics.overlap_accuracy(alpha, pi))
            res[name]["mae"].append(metrics.ae(alpha, pi))
            res[name]["r2"].append(metrics.r2(alpha, pi))
    return {name: {"oa": float(np.mean(v["oa"])), "oa_sd": float(np.std(v["oa"])), "mae": float(np.mean(v["mae"])),
                   "r2": float(np.nanmean(v["r2"])), "ms": 1000 * secs[name] / trials} for name, v in res.items()}


def coverage(ds: Dataset, names, trials: int, n: int, n_boot: int, level: float, seed: int) -> dict[str, float]:
    rng = np.random.default_rng(seed + 1)
    hits = {name: [] for name in names}
    width = {name: [] for name in names}
    for _ in range(trials):
        alpha = rng.dirichlet(np.ones(len(ds.domains)))
        inp = ds.inputs(ds.sample(rng, alpha, n))
        s = int(rng.integers(1 << 31))
        for name in names:
            r = estimate(name, inp, n_boot=n_boot, seed=s, level=level)
            hits[name].extend(((r.ci_low - 1e-12 <= alpha) & (alpha <= r.ci_high + 1e-12)).tolist())
            width[name].append(float(np.mean(r.ci_high - r.ci_low)))
    return {name: (float(np.mean(hits[name])), float(np.mean(width[name]))) for name in names}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=100)
    ap.add_argument("--n", type=int, nargs="+", default=[300, 1000])
    ap.add_argument("--coverage-trials", type=int, default=20)
    ap.add_argument("--n-boot", type=int, default=100)
    ap.add_argument("--estimators", nargs="+", default=list_estimators())
    ap.add_argument("--coverage-estimators", nargs="+", default=["pacc", "llmsurgeon_code", "emq", "rlls"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--write", action="store_true", help="write the results into BENCHMARKS.md")
    args = ap.parse_args()

    t0 = time.time()
    datasets = [gaussian("gauss-easy", 1.6, 1), gaussian("gauss-hard", 1.0, 2), digits()]
    lines = [SECTION, "",
             f"`python benchmarks/mixture_protocol.py --trials {args.trials} --n {' '.join(map(str, args.n))} "
             f"--coverage-trials {args.coverage_trials} --n-boot {args.n_boot}` "
             f"({platform.processor() or platform.machine()}, {time.strftime('%Y-%m-%d')}). Each trial draws "
             "alpha ~ Dirichlet(1) and N generations from a held-out pool; reference posteriors are 5-fold "
             "cross-fitted; the pool is scored by the model trained on all reference documents. OA = mean "
             "overlap accuracy (%, +- sd over trials), MAE = mean |alpha - pi| over domains, R^2 across domains "
             "(mean over trials), ms = time per estimate without bootstrap.", ""]
    for ds in datasets:
        from ingest.mixture import confusion_summary
        cs = confusion_summary(ds.inputs(np.zeros((0, len(ds.domains)))))
        lines += [f"### {ds.name}: {ds.note}; cond(soft C) {cs.soft_condition_number:.2f}, "
                  f"cond(hard C) {cs.hard_condition_number:.2f}", ""]
        header = "| estimator | " + " | ".join(f"OA N={n} | MAE N={n} | R^2 N={n}" for n in args.n) + " | ms |"
        lines += [header, "|---|" + "---|" * (3 * len(args.n) + 1)]
        results = {n: sweep(ds, args.estimators, args.trials, n, args.seed) for n in args.n}
        for name in args.estimators:
            cells = []
            for n in args.n:
                r = results[n][name]
                cells += [f"{100 * r['oa']:.2f} +- {100 * r['oa_sd']:.1f}", f"{r['mae']:.4f}", f"{r['r2']:.3f}"]
            lines.append(f"| {name} | " + " | ".join(cells) + f" | {results[args.n[-1]][name]['ms']:.1f} |")
        if args.coverage_trials:
            n = args.n[0]
            cov = coverage(ds, args.coverage_estimators, args.coverage_trials, n, args.n_boot, 0.9, args.seed)
            lines += ["", f"90% bootstrap interval coverage (N={n}, {args.coverage_trials} trials x "
                      f"{len(ds.domains)} domains, n_boot={args.n_boot}, resampling generations and reference): "
                      + ", ".join(f"{name} {100 * c:.0f}% (mean width {w:.3f})" for name, (c, w) in cov.items())]
        lines.append("")
        print("\n".join(lines[-(len(args.estimators) + 6):]), flush=True)
    lines.append(f"Total run time {time.time() - t0:.0f} s.")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.write:
        path = ROOT / "BENCHMARKS.md"
        old = path.read_text() if path.exists() else "# Benchmarks\n"
        pattern = re.compile(rf"^{re.escape(SECTION)}\n.*?(?=^## |\Z)", re.S | re.M)
        new = pattern.sub(lambda _m: text + "\n", old) if pattern.search(old) else old.rstrip("\n") + "\n\n" + text
        path.write_text(new)
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
