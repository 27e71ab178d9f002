"""The ways to turn a merge log and reference text into a mixture with an interval: a registry.

* `paper` - Hayase et al.'s LP as published (slack per merge step and per pair, every constraint weighs the
  same), over the first 300 merges, with a percentile bootstrap over reference documents. The intervals see
  document-sampling noise only and covered the truth 0-75 % of the time on the sandbox tokenizers.
* `noise` (default) - the same LP with every constraint divided by its bootstrap standard error
  (`noise.NoiseScale`, taken at the unweighted LP's mixture: a violation costs its size in standard errors, so
  a merge whose sign the reference text cannot decide costs little); the number of merges chosen from the data (the candidate whose bootstrap
  replicates agree most); the point is the mean of the bootstrap replicates (an LP optimum jumps between
  vertices as counts move; the mean over replicates is steadier); and the interval is the normal interval of
  the replicates' spread widened by `CALIBRATION` (fitted on sandbox tokenizers of known mixture: the
  bootstrap does not see the shift between the reference files and the training files, which is as large as
  the noise it does see). See docs/mixture-method.md and BENCHMARKS.md for how it was fitted and measured.

Both receive the same inputs and return a `MethodResult`; `estimate.estimate_tokenizer_mixture` picks one by
name, and the CLI's `--method` lists `METHODS`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Callable

import numpy as np

from ingest.errors import UserError
from ingest.mixture.tokenizer.counting import MergeLog
from ingest.mixture.tokenizer.noise import noise_scale
from ingest.mixture.tokenizer.solve import LpSolution, solve_mixture

PAPER_MERGES = 300  # the paper method's default: on the sandbox tokenizers the first 300 were the most accurate
MERGE_GRID = (100, 200, 300, 500)  # the noise method's candidates for the number of merges
NOISE_REPLICATES = 20  # bootstrap replicates behind each constraint's standard error (and the merge choice)
SELECT_REPLICATES = 10  # of those, replicates solved per candidate number of merges to measure their spread
# interval half-width = z(level) x CALIBRATION x bootstrap SD: the 90th percentile of |error| / (z SD) over the 32
# (tokenizer, domain) cases of 10 sandbox tokenizers with held-out references (benchmarks/tokenizer_mixture_noise.py,
# 2026-12-04); cross-fitted (one group of mixtures -> the other) it covered 100 % and 55 % (BENCHMARKS.md)
CALIBRATION = 4.8


@dataclass(frozen=True)
class MethodInput:
    """What every method gets: the merge log of all merges it may use, the point frequency table, and seeded
    bootstrap replicates of it (lists of words x domains tables, per million bytes)."""

    log: MergeLog
    freqs: np.ndarray
    replicates: Callable[[int], list[np.ndarray]]  # n -> the next n replicate tables (one seeded stream)
    n_boot: int
    level: float
    top_k: int
    pair_slack: bool
    max_merges: int | None  # None = the method's default


@dataclass(frozen=True)
class MethodResult:
    estimate: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    solution: LpSolution
    n_merges_used: int
    n_boot_failed: int
    params: dict = field(default_factory=dict)


def _solve_reps(log: MergeLog, reps: list[np.ndarray], point: LpSolution, top_k: int, pair_slack: bool,
                noise=None) -> tuple[list[np.ndarray], int]:
    out, failed = [], 0
    for F in reps:
        try:
            out.append(solve_mixture(log, F, top_k=top_k, start=point.alpha, pair_slack=pair_slack,
                                     seed_keys=point.keys, noise=noise).alpha)
        except (RuntimeError, ValueError):
            failed += 1
    return out, failed


def _nan(n: int) -> np.ndarray:
    return np.full(n, np.nan)


def paper(x: MethodInput) -> MethodResult:
    """Hayase et al.'s LP over the first `max_merges` (default 300) merges; percentile bootstrap interval."""
    n_merges = PAPER_MERGES if x.max_merges is None else x.max_merges
    log = x.log.first(n_merges) if n_merges else x.log
    point = solve_mixture(log, x.freqs, top_k=x.top_k, pair_slack=x.pair_slack)
    reps, failed = _solve_reps(log, x.replicates(x.n_boot), point, x.top_k, x.pair_slack)
    n = x.freqs.shape[1]
    if reps:
        lo, hi = np.percentile(np.vstack(reps), [100 * (1 - x.level) / 2, 100 * (1 + x.level) / 2], axis=0)
    else:
        lo, hi = _nan(n), _nan(n)
    return MethodResult(estimate=point.alpha, ci_low=lo, ci_high=hi, solution=point, n_merges_used=log.n_steps,
                        n_boot_failed=failed, params={"interval": "percentile bootstrap"})


def noise(x: MethodInput) -> MethodResult:
    """The noise-weighted LP, the number of merges from the data, the bagged point and a calibrated interval
    (see the module docstring)."""
    n = x.freqs.shape[1]
    noise_reps = x.replicates(NOISE_REPLICATES)
    if x.max_merges is not None:
        grid = [x.max_merges or x.log.n_steps]
    else:
        grid = sorted({min(g, x.log.n_steps) for g in MERGE_GRID})
    spread = {}
    best = None
    for g in grid:
        log = x.log.first(g)
        # the standard errors are taken at the unweighted LP's mixture: at uniform weights a minority domain's
        # noise counts as much as a majority's, which cost 0.01-0.07 MAE on the sandbox tokenizers
        alpha0 = solve_mixture(log, x.freqs, top_k=x.top_k, pair_slack=x.pair_slack).alpha
        scale = noise_scale(log, noise_reps, alpha0)
        point = solve_mixture(log, x.freqs, top_k=x.top_k, pair_slack=x.pair_slack, noise=scale)
        if len(grid) > 1:
            reps, _ = _solve_reps(log, noise_reps[:SELECT_REPLICATES], point, x.top_k, x.pair_slack, scale)
            spread[g] = float(np.vstack(reps).std(axis=0, ddof=1).sum()) if len(reps) > 1 else np.inf
        else:
            spread[g] = 0.0
        if best is None or spread[g] < best[0]:
            best = (spread[g], g, log, scale, point)
    _, chosen, log, scale, point = best
    reps, failed = _solve_reps(log, x.replicates(x.n_boot), point, x.top_k, x.pair_slack, scale)
    sd = _nan(n)
    if len(reps) >= 2:
        R = np.vstack(reps)
        est = R.mean(axis=0)
        sd = R.std(axis=0, ddof=1)
        half = NormalDist().inv_cdf((1 + x.level) / 2) * CALIBRATION * sd
        lo, hi = np.clip(est - half, 0.0, 1.0), np.clip(est + half, 0.0, 1.0)
    else:
        est, lo, hi = point.alpha, _nan(n), _nan(n)
    params = {"interval": f"normal, bootstrap SD x {CALIBRATION:g}", "point": "mean of the bootstrap replicates",
              "merge_grid": grid, "merges_chosen": chosen, "spread_by_merges": {str(k): v for k, v in spread.items()},
              "noise_replicates": NOISE_REPLICATES, "bootstrap_sd": [None if v != v else round(float(v), 6) for v in sd]}
    return MethodResult(estimate=est, ci_low=lo, ci_high=hi, solution=point, n_merges_used=log.n_steps,
                        n_boot_failed=failed, params=params)


@dataclass(frozen=True)
class MixtureMethod:
    name: str
    summary: str
    run: Callable[[MethodInput], MethodResult]


METHODS: dict[str, MixtureMethod] = {m.name: m for m in (
    MixtureMethod("noise", "constraints in bootstrap standard errors, merges chosen from the data, calibrated "
                           "interval (default)", noise),
    MixtureMethod("paper", "Hayase et al.'s LP over the first 300 merges, percentile bootstrap", paper),
)}
DEFAULT_METHOD = "noise"


def get_method(name: str) -> MixtureMethod:
    if name not in METHODS:
        raise UserError(f"unknown bpe_merges method {name!r}: use one of {', '.join(sorted(METHODS))}")
    return METHODS[name]
