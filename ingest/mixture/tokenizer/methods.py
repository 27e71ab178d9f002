"""The ways to turn a merge log and reference text into a mixture with an interval: a registry.

* `paper` - Hayase et al.'s LP as published (slack per merge step and per pair, every constraint weighs the
  same), over the first 300 merges, with a percentile bootstrap over reference documents. The intervals see
  document-sampling noise only and covered the truth 0-75 % of the time on the sandbox tokenizers.
* `noise` (default) - the same LP with every constraint divided by its bootstrap standard error
  (`noise.NoiseScale`, 20 replicates of the reference documents taken at the unweighted LP's mixture: a
  violation costs its size in standard errors, so a merge whose sign the reference text cannot decide costs
  little), the number of merges chosen from 100/200/300/500 (the candidate whose replicates agree most). The
  point is bias-corrected, 2 x the LP point - the mean of the document replicates: under noise the LP takes
  weight from the domain with the noisiest counts, and the replicates, noisier again, show by how much. The
  interval comes from a second set of replicates that stands for both samples behind the merge list
  (`resample`): the reference's *files* (pieces of one file together) and the tokenizer's own training text, a
  second sample of each domain of T x alpha_i bytes (T: `training_bytes`, by default as many bytes as the
  reference), solved with the same LP; half-width z x `CALIBRATION` x their SD, k fitted on one set of sandbox
  tokenizers and checked on others.
* `noise-v1` - the first noise method (2026-12-04), kept to compare against: the same LP and merges, the mean of
  the document replicates as the point, their SD times 4.8 as the interval (a factor that had to make up for the
  files and the training sample the replicates left out).

All receive the same inputs and return a `MethodResult`; `estimate.estimate_tokenizer_mixture` picks one by
name, and the CLI's `--method` lists `METHODS`. See docs/mixture-method.md and BENCHMARKS.md for the
measurements behind every constant here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Callable

import numpy as np

from ingest.errors import UserError
from ingest.mixture.tokenizer.counting import MergeLog
from ingest.mixture.tokenizer.noise import noise_scale
from ingest.mixture.tokenizer.resample import training_scale
from ingest.mixture.tokenizer.solve import LpSolution, solve_mixture

PAPER_MERGES = 300  # the paper method's default: on the sandbox tokenizers the first 300 were the most accurate
NOISE_REPLICATES = 20  # bootstrap replicates behind each constraint's standard error (and noise-v1's merge choice)
SELECT_REPLICATES = 10  # noise-v1: of those, replicates solved per candidate number of merges to measure their spread


@dataclass(frozen=True)
class NoiseConfig:
    """What distinguishes `noise` from `noise-v1` (see the module docstring)."""

    merge_grid: tuple[int, ...]  # candidates for the number of merges; one value = fixed
    calibration: float  # interval half-width = z(level) x calibration x the interval replicates' SD
    interval_sampling: bool  # interval from replicates of reference files + the training sample (else: documents)
    bias_correct: bool  # point = 2 x LP point - mean of the document replicates (else: that mean)


# noise-v1: k = the 90th percentile of |error| / (z SD) over the 32 (tokenizer, domain) cases of 10 sandbox
# tokenizers (2026-12-04); cross-fitted it covered 100 % and 55 % (BENCHMARKS.md)
NOISE_V1 = NoiseConfig(merge_grid=(100, 200, 300, 500), calibration=4.8, interval_sampling=False, bias_correct=False)
# noise: k fitted on the calibration tokenizers of benchmarks/tokenizer_mixture_calibration.py (BENCHMARKS.md,
# "2026-12-04 (second pass)"): the 90th percentile of |error| / (z SD) over all of them
CALIBRATION = 1.6  # 1.59: fitted on all 20 calibration tokenizers (80 cases); cross-fitted 1.39 / 1.88, 71/80 covered
NOISE_DEFAULT = NoiseConfig(merge_grid=NOISE_V1.merge_grid, calibration=CALIBRATION, interval_sampling=True,
                            bias_correct=True)


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
    # scale s_i per domain (None = reference only) -> a seeded stream of replicates resampling reference *files*
    file_replicates: Callable[[np.ndarray | None], Callable[[int], list[np.ndarray]]] | None = None
    ref_bytes: np.ndarray | None = None  # (n_domains,) bytes of reference text per domain
    training_bytes: float | None = None  # bytes of the tokenizer's training text; None = as many as the reference


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


def noise_method(x: MethodInput, cfg: NoiseConfig) -> MethodResult:
    """The noise-weighted LP under `cfg`: the merges, the replicates, the point and the calibrated interval
    (see the module docstring). The constraint weights, the choice of merges and the bias correction use
    replicates of the reference documents; the interval (with `interval_sampling`) uses replicates of the
    reference files and of the training sample, solved with the same LP."""
    n = x.freqs.shape[1]
    if x.max_merges is not None:
        grid = [x.max_merges or x.log.n_steps]
    else:
        grid = sorted({min(g, x.log.n_steps) for g in cfg.merge_grid})
    noise_reps = x.replicates(NOISE_REPLICATES)
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
            best = (spread[g], g, log, scale, point, alpha0)
    _, chosen, log, scale, point, alpha0 = best
    reps, failed = _solve_reps(log, x.replicates(x.n_boot), point, x.top_k, x.pair_slack, scale)
    s_train, T, int_reps = None, None, reps
    if cfg.interval_sampling and x.n_boot >= 2:
        if x.file_replicates is None or x.ref_bytes is None:
            raise ValueError("the noise method's interval needs file_replicates and ref_bytes")
        T = float(x.ref_bytes.sum()) if x.training_bytes is None else float(x.training_bytes)
        s_train = training_scale(x.ref_bytes, alpha0, T)  # the training sample's spread per domain
        int_reps, failed2 = _solve_reps(log, x.file_replicates(s_train)(x.n_boot), point, x.top_k, x.pair_slack,
                                        scale)
        failed += failed2
    sd = sd_doc = mean_doc = _nan(n)
    if len(reps) >= 2 and len(int_reps) >= 2:
        R = np.vstack(reps)
        mean_doc, sd_doc = R.mean(axis=0), R.std(axis=0, ddof=1)
        sd = np.vstack(int_reps).std(axis=0, ddof=1)
        if cfg.bias_correct:  # the LP's bias under noise, estimated by the replicates' mean shift, taken off
            est = np.clip(2 * point.alpha - mean_doc, 0.0, None)
            est = est / est.sum() if est.sum() > 0 else point.alpha
        else:
            est = mean_doc
        half = NormalDist().inv_cdf((1 + x.level) / 2) * cfg.calibration * sd
        lo, hi = np.clip(est - half, 0.0, 1.0), np.clip(est + half, 0.0, 1.0)
    else:
        est, lo, hi = point.alpha, _nan(n), _nan(n)

    def r6(v):
        return [None if u != u else round(float(u), 6) for u in v]

    params = {"interval": f"normal, bootstrap SD x {cfg.calibration:g}",
              "interval_replicates": "reference files + training sample" if cfg.interval_sampling else "documents",
              "point": "2 x LP point - mean of the document replicates" if cfg.bias_correct
              else "mean of the bootstrap replicates",
              "merge_grid": grid, "merges_chosen": chosen, "spread_by_merges": {str(k): v for k, v in spread.items()},
              "noise_replicates": NOISE_REPLICATES, "bootstrap_sd": r6(sd), "document_sd": r6(sd_doc),
              "document_mean": r6(mean_doc), "lp_point": r6(point.alpha), "training_bytes": T,
              "training_scale": None if s_train is None else r6(s_train)}
    return MethodResult(estimate=est, ci_low=lo, ci_high=hi, solution=point, n_merges_used=log.n_steps,
                        n_boot_failed=failed, params=params)


def noise(x: MethodInput) -> MethodResult:
    """The default noise method (`NOISE_DEFAULT`)."""
    return noise_method(x, NOISE_DEFAULT)


def noise_v1(x: MethodInput) -> MethodResult:
    """The first noise method (`NOISE_V1`), for comparison."""
    return noise_method(x, NOISE_V1)


@dataclass(frozen=True)
class MixtureMethod:
    name: str
    summary: str
    run: Callable[[MethodInput], MethodResult]


METHODS: dict[str, MixtureMethod] = {m.name: m for m in (
    MixtureMethod("noise", "constraints in bootstrap standard errors, merges chosen from the data, bias-corrected "
                           "point, interval from reference files and the training sample (default)", noise),
    MixtureMethod("noise-v1", "the first noise method (2026-12-04): documents one by one, merges chosen from the "
                              "data, k = 4.8", noise_v1),
    MixtureMethod("paper", "Hayase et al.'s LP over the first 300 merges, percentile bootstrap", paper),
)}
DEFAULT_METHOD = "noise"


def get_method(name: str) -> MixtureMethod:
    if name not in METHODS:
        raise UserError(f"unknown bpe_merges method {name!r}: use one of {', '.join(sorted(METHODS))}")
    return METHODS[name]
