"""AUC and TPR at a fixed FPR of a membership score, as mimir reports them, and a bootstrap interval.

Scores are oriented: higher = more member-like. The ROC curve has one point per distinct score (members and
non-members at or above it count as predicted members), from (0, 0) to (1, 1), exactly scikit-learn's
`roc_curve` with `drop_intermediate=False`. AUC is the area under it, which with ties is the Mann-Whitney
statistic P(member > non-member) + 1/2 P(tie). TPR at FPR t is the largest TPR of a curve point whose FPR is
strictly below t, never interpolated: mimir's `tpr[np.where(fpr < t)[0][-1]]` on scikit-learn's curve (the
points `drop_intermediate` removes never hold that maximum), FPR computed as scikit-learn does (false
positives / non-members, a float). With 1/t non-members or fewer only the point FPR = 0 qualifies, so read
TPR at 0.1 % FPR only with well over 1,000 non-members (`n_non_members` is in every mart row).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

FPR_TARGETS = (0.01, 0.001)  # mimir's TPR@1%FPR and TPR@0.1%FPR
N_BOOT = 1000  # bootstrap replicates of the AUC interval
CI_LEVEL = 0.95
SEED = 0


def roc_points(member: Sequence[float], non_member: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """(fpr, tpr) at every distinct score from the highest down, starting at (0, 0)."""
    m = np.asarray(member, dtype=float)
    n = np.asarray(non_member, dtype=float)
    thresholds = np.unique(np.concatenate([m, n]))[::-1]
    ms, ns = np.sort(m), np.sort(n)
    tp = len(ms) - np.searchsorted(ms, thresholds, side="left")  # members with score >= threshold
    fp = len(ns) - np.searchsorted(ns, thresholds, side="left")
    tpr = np.concatenate([[0.0], tp / len(ms)])
    fpr = np.concatenate([[0.0], fp / len(ns)])
    return fpr, tpr


def auc(member: Sequence[float], non_member: Sequence[float]) -> float:
    """Area under the ROC curve (trapezoids over `roc_points`; ties count one half)."""
    fpr, tpr = roc_points(member, non_member)
    return float(np.sum(np.diff(fpr) * (tpr[1:] + tpr[:-1]) / 2))


def tpr_at_fpr(member: Sequence[float], non_member: Sequence[float], target: float) -> float:
    """The largest TPR of a ROC point whose FPR < target (mimir's rule; FPR 0 always qualifies)."""
    fpr, tpr = roc_points(member, non_member)
    return float(tpr[fpr < target].max())


def bootstrap_auc(member: Sequence[float], non_member: Sequence[float], n_boot: int = N_BOOT, seed: int = SEED,
                  ci_level: float = CI_LEVEL) -> tuple[float, float]:
    """Percentile interval of the AUC over `n_boot` replicates that resample members and non-members
    separately (each group keeps its size). AUC per replicate from average ranks (Mann-Whitney), vectorised."""
    from scipy.stats import rankdata

    m = np.asarray(member, dtype=float)
    n = np.asarray(non_member, dtype=float)
    rng = np.random.default_rng(seed)
    bm = m[rng.integers(0, len(m), size=(n_boot, len(m)))]
    bn = n[rng.integers(0, len(n), size=(n_boot, len(n)))]
    ranks = rankdata(np.concatenate([bm, bn], axis=1), axis=1)
    u = ranks[:, :len(m)].sum(axis=1) - len(m) * (len(m) + 1) / 2
    aucs = u / (len(m) * len(n))
    a = (1 - ci_level) / 2
    return float(np.quantile(aucs, a)), float(np.quantile(aucs, 1 - a))


@dataclass(frozen=True)
class Benchmark:
    """One score's numbers on one set of members and non-members (None where a group is empty)."""

    n_members: int
    n_non_members: int
    auc: float | None
    auc_low: float | None
    auc_high: float | None
    tpr_at_1pct_fpr: float | None
    tpr_at_01pct_fpr: float | None


def benchmark(member: Sequence[float], non_member: Sequence[float], n_boot: int = N_BOOT, seed: int = SEED,
              ci_level: float = CI_LEVEL) -> Benchmark:
    """Every number of a mart row; NaN scores are dropped first (a score a text has none of). Scores are sorted
    before the bootstrap: the rows reach the mart in no fixed order, and the same seed must give the same
    interval whatever the order."""
    m = np.sort(np.asarray(member, dtype=float))
    n = np.sort(np.asarray(non_member, dtype=float))
    m, n = m[~np.isnan(m)], n[~np.isnan(n)]
    if not len(m) or not len(n):
        return Benchmark(len(m), len(n), None, None, None, None, None)
    lo, hi = bootstrap_auc(m, n, n_boot, seed, ci_level) if n_boot > 0 else (None, None)
    return Benchmark(len(m), len(n), auc(m, n), lo, hi, tpr_at_fpr(m, n, FPR_TARGETS[0]),
                     tpr_at_fpr(m, n, FPR_TARGETS[1]))
