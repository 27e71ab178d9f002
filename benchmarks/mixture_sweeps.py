"""Sweeps for the mixture estimators: how much reference data, how fine the domains, how good the classifier.

Three questions a user of `lmaudit classify` + `fct_mixture_estimates` asks before collecting reference
documents, each answered on offline data with the protocol of benchmarks/mixture_protocol.py (5-fold
cross-fitted logistic regression on the reference set, a final model scoring a held-out pool, alpha ~
Dirichlet(1), N generations drawn from the pool with those proportions):

1. reference documents per domain: 25, 50, 100, 250, 500, 1000 (K = 6 Gaussians, spread 1.0);
2. domain granularity: scikit-learn's digits as 10 domains (split) or 5 pairs (merged): estimating the 5 pairs
   directly vs estimating the 10 digits and summing pairs;
3. classifier accuracy vs estimation accuracy: K = 6 Gaussians with the spread of the means from 0.5 to 2.2.

    python benchmarks/mixture_sweeps.py [--trials 40] [--n 1000] [--write]

`--write` replaces the section "## Mixture estimators (sweeps)" of BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from mixture_protocol import _crossfit  # noqa: E402

from ingest.mixture import get_estimator, metrics  # noqa: E402

SECTION = "## Mixture estimators (sweeps)"
ESTIMATORS = ["direct", "pacc", "emq", "llmsurgeon_code", "rlls"]


def gaussians(n_ref: int, spread: float, seed: int, k: int = 6, dim: int = 8, n_pool: int = 3000):
    rng = np.random.default_rng(seed)
    means = rng.normal(0, spread, (k, dim))

    def draw(n):
        return np.vstack([rng.normal(means[d], 1.0, (n, dim)) for d in range(k)]), np.repeat(np.arange(k), n)

    x_ref, y_ref = draw(n_ref)
    x_pool, y_pool = draw(n_pool)
    return _crossfit(x_ref, y_ref, x_pool, y_pool, k, f"gauss n_ref={n_ref} spread={spread}", f"spread {spread}")


def digits(k: int, seed: int = 0):
    from sklearn.datasets import load_digits
    from sklearn.decomposition import PCA
    from sklearn.model_selection import train_test_split

    d = load_digits()
    y = d.target if k == 10 else d.target // 2
    x_ref, x_pool, y_ref, y_pool = train_test_split(d.data, y, test_size=0.5, stratify=y, random_state=seed)
    pca = PCA(8, random_state=seed).fit(x_ref)
    return _crossfit(pca.transform(x_ref), y_ref, pca.transform(x_pool), y_pool, k, f"digits-{k}", f"{k} domains")


def trials(ds, names, n_trials: int, n: int, seed: int, alphas=None):
    """Mean OA (%) per estimator over trials; `alphas` fixes the true mixtures (for paired comparisons)."""
    rng = np.random.default_rng(seed)
    out = {name: [] for name in names}
    pis = {name: [] for name in names}
    for t in range(n_trials):
        alpha = alphas[t] if alphas is not None else rng.dirichlet(np.ones(len(ds.domains)))
        inp = ds.inputs(ds.sample(rng, alpha, n))
        for name in names:
            pi = get_estimator(name).estimate(inp)
            out[name].append(metrics.overlap_accuracy(alpha, pi))
            pis[name].append(pi)
    return {name: 100 * float(np.mean(v)) for name, v in out.items()}, pis


def accuracy(ds) -> float:
    return float((ds.pool_posteriors.argmax(1) == ds.pool_labels).mean())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=40)
    ap.add_argument("--n", type=int, default=1000, help="generations per trial")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--write", action="store_true")
    a = ap.parse_args()
    t0, c0 = time.time(), time.process_time()
    lines = [SECTION, "", f"`python benchmarks/mixture_sweeps.py --trials {a.trials} --n {a.n}` "
             f"({time.strftime('%Y-%m-%d')}, load average {os.getloadavg()[0]:.1f}). Protocol of the sweep above "
             "(5-fold cross-fitted logistic regression, alpha ~ Dirichlet(1), N generations from a held-out pool); "
             "mean overlap accuracy % over trials.", ""]

    lines += ["### Reference documents per domain (K = 6 Gaussians, spread 1.0)", "",
              "| per domain | pool accuracy | " + " | ".join(ESTIMATORS) + " |", "|---|---|" + "---|" * len(ESTIMATORS)]
    for n_ref in (25, 50, 100, 250, 500, 1000):
        ds = gaussians(n_ref, 1.0, a.seed + 7)
        oa, _ = trials(ds, ESTIMATORS, a.trials, a.n, a.seed)
        lines.append(f"| {n_ref} | {accuracy(ds):.3f} | " + " | ".join(f"{oa[e]:.1f}" for e in ESTIMATORS) + " |")
        print(lines[-1], flush=True)

    lines += ["", "### Domain granularity (digits: 10 digits split, or 5 pairs merged)", "",
              "| estimator | 10 domains | 5 domains, estimated directly | 5 domains, summed from the 10-domain estimate |",
              "|---|---|---|---|"]
    split, merged = digits(10, a.seed), digits(5, a.seed)
    rng = np.random.default_rng(a.seed + 1)
    alphas10 = [rng.dirichlet(np.ones(10)) for _ in range(a.trials)]
    oa10, pis10 = trials(split, ESTIMATORS, a.trials, a.n, a.seed, alphas10)
    alphas5 = [al.reshape(5, 2).sum(1) for al in alphas10]
    oa5, _ = trials(merged, ESTIMATORS, a.trials, a.n, a.seed, alphas5)
    for e in ESTIMATORS:
        summed = 100 * np.mean([metrics.overlap_accuracy(al5, pi.reshape(5, 2).sum(1))
                                for al5, pi in zip(alphas5, pis10[e])])
        lines.append(f"| {e} | {oa10[e]:.1f} | {oa5[e]:.1f} | {summed:.1f} |")
    lines.append(f"\nPool accuracy: 10 domains {accuracy(split):.3f}, 5 domains {accuracy(merged):.3f}.")
    print("\n".join(lines[-8:]), flush=True)

    lines += ["", "### Classifier accuracy vs estimation accuracy (K = 6 Gaussians, 500 reference documents each)", "",
              "| spread | pool accuracy | " + " | ".join(ESTIMATORS) + " |", "|---|---|" + "---|" * len(ESTIMATORS)]
    for spread in (0.5, 0.7, 1.0, 1.3, 1.6, 2.2):
        ds = gaussians(500, spread, a.seed + 3)
        oa, _ = trials(ds, ESTIMATORS, a.trials, a.n, a.seed)
        lines.append(f"| {spread} | {accuracy(ds):.3f} | " + " | ".join(f"{oa[e]:.1f}" for e in ESTIMATORS) + " |")
        print(lines[-1], flush=True)
    lines += ["", f"Run time {time.time() - t0:.0f} s wall, {time.process_time() - c0:.0f} CPU-s."]
    text = "\n".join(lines) + "\n"
    print(text)
    if a.write:
        path = ROOT / "BENCHMARKS.md"
        old = path.read_text()
        pattern = re.compile(rf"^{re.escape(SECTION)}\n.*?(?=^## |\Z)", re.S | re.M)
        new = pattern.sub(lambda _m: text + "\n", old) if pattern.search(old) else old.replace(
            "## Mixture: classifiers and dbt", text + "\n## Mixture: classifiers and dbt", 1)
        path.write_text(new)
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
