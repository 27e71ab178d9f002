"""Evaluation of an estimated mixture `p` against a known one `a` (both vectors over the same K domains).

- overlap accuracy = 1 - 0.5 * sum_k |a_k - p_k|  (the paper's headline metric; 1 - total variation)
- AE  = mean_k |a_k - p_k|   (QuaPy's `ae`; the paper's MAE across domains is this same number)
- MAE = mean of AE over several (a, p) pairs (rows of 2-D inputs); equals AE for one pair
- R^2 = 1 - sum_k (a_k - p_k)^2 / sum_k (a_k - mean(a))^2  (across domains; nan when a is uniform)
- RAE = mean_k |s(a)_k - s(p)_k| / s(a)_k with s the QuaPy smoothing s(x) = (x + eps) / (1 + K eps)
- KL  = sum_k s(a)_k log(s(a)_k / s(p)_k), same smoothing
eps = 1 / (2N) with N the sample size (the number of generations), as QuaPy's `SAMPLE_SIZE` convention.
"""

from __future__ import annotations

import numpy as np


def _pair(a, p) -> tuple[np.ndarray, np.ndarray]:
    a = np.asarray(a, dtype=float)
    p = np.asarray(p, dtype=float)
    if a.shape != p.shape:
        raise ValueError(f"shape mismatch {a.shape} vs {p.shape}")
    return a, p


def _eps(eps: float | None, n: int | None) -> float:
    if eps is not None:
        return float(eps)
    if n is None or n <= 0:
        raise ValueError("give eps or the sample size n (eps = 1/(2n))")
    return 1.0 / (2.0 * n)


def smooth(x, eps: float) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    return (x + eps) / (eps * x.shape[-1] + 1)


def overlap_accuracy(a, p):
    a, p = _pair(a, p)
    return 1.0 - 0.5 * np.abs(a - p).sum(axis=-1)


def ae(a, p):
    a, p = _pair(a, p)
    return np.abs(a - p).mean(axis=-1)


def mae(a, p) -> float:
    return float(np.mean(ae(a, p)))


def r2(a, p):
    a, p = _pair(a, p)
    ss_res = ((a - p) ** 2).sum(axis=-1)
    ss_tot = ((a - a.mean(axis=-1, keepdims=True)) ** 2).sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(ss_tot > 0, 1.0 - ss_res / np.where(ss_tot > 0, ss_tot, 1.0), np.nan)


def rae(a, p, eps: float | None = None, n: int | None = None):
    a, p = _pair(a, p)
    e = _eps(eps, n)
    sa, sp = smooth(a, e), smooth(p, e)
    return (np.abs(sa - sp) / sa).mean(axis=-1)


def kld(a, p, eps: float | None = None, n: int | None = None):
    a, p = _pair(a, p)
    e = _eps(eps, n)
    sa, sp = smooth(a, e), smooth(p, e)
    return (sa * np.log(sa / sp)).sum(axis=-1)


def evaluate(truth, estimate, n: int | None = None, eps: float | None = None) -> dict[str, float]:
    """All metrics for one (truth, estimate) pair; RAE and KL need n (generations) or eps."""
    out = {"overlap_accuracy": float(overlap_accuracy(truth, estimate)), "ae": float(ae(truth, estimate)),
           "mae": mae(truth, estimate), "r2": float(r2(truth, estimate))}
    if n is not None or eps is not None:
        out["rae"] = float(rae(truth, estimate, eps=eps, n=n))
        out["kl"] = float(kld(truth, estimate, eps=eps, n=n))
    return out
