"""`estimate()`: a point estimate plus percentile intervals from a seeded bootstrap.

Each replicate resamples, with replacement,
- the generations (n_gen draws), when "generations" is in `resample`;
- the reference documents within each domain (the per-domain support is kept, fold ids travel with their
  documents), and the calibration set likewise, when "reference" is in `resample`;
and then re-fits the estimator from scratch on the replicate, so C (and the calibration, the split, the
KDEs) is re-estimated and the interval includes the error of C, not just the sampling error of p_bar.
The interval is the (1-level)/2 and (1+level)/2 percentiles of the replicate estimates.
A replicate that raises is counted in diagnostics["n_boot_failed"] and skipped.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ingest.errors import UserError
from ingest.mixture.confusion import support as domain_support
from ingest.mixture.estimators import Estimator, get_estimator, list_estimators
from ingest.mixture.records import MixtureEstimate, MixtureInputs

RESAMPLE = ("generations", "reference")


def _stratified(rng: np.random.Generator, labels: np.ndarray, k: int) -> np.ndarray:
    idx = np.empty(labels.shape[0], dtype=int)
    pos = 0
    for d in range(k):
        members = np.flatnonzero(labels == d)
        if members.size:
            idx[pos:pos + members.size] = rng.choice(members, size=members.size, replace=True)
            pos += members.size
    return idx[:pos]


def replicate(inputs: MixtureInputs, rng: np.random.Generator, resample: Sequence[str] = RESAMPLE) -> MixtureInputs:
    """One bootstrap replicate of `inputs`."""
    gen_idx = rng.integers(0, inputs.n_gen, size=inputs.n_gen) if "generations" in resample else None
    ref_idx = cal_idx = None
    if "reference" in resample:
        ref_idx = _stratified(rng, inputs.ref_labels, inputs.k)
        if inputs.calib_labels is not None:
            cal_idx = _stratified(rng, inputs.calib_labels, inputs.k)
    return inputs._resampled(ref_idx, gen_idx, cal_idx)


def estimate(estimator: str | Estimator, inputs: MixtureInputs, *, n_boot: int = 200, seed: int = 0,
             level: float = 0.95, resample: Iterable[str] = RESAMPLE, keep_samples: bool = False,
             **params: Any) -> MixtureEstimate:
    """Estimate the mixture of `inputs.gen_posteriors` with a named (or given) estimator, with intervals.

    `params` go to the estimator (`get_estimator(name, **params)`). n_boot = 0 gives NaN intervals.
    Deterministic for a given seed.
    """
    if isinstance(estimator, str):
        est = get_estimator(estimator, **params)
    else:
        if params:
            raise UserError("pass estimator parameters either in the estimator object or as keywords, not both")
        est = estimator
    if not isinstance(inputs, MixtureInputs):
        raise UserError(f"inputs must be a MixtureInputs, got {type(inputs).__name__}")
    if inputs.n_gen == 0:
        raise UserError("no generations to estimate a mixture from: generate (or import) samples for the run")
    resample = tuple(resample)
    bad = sorted(set(resample) - set(RESAMPLE))
    if bad:
        raise UserError(f"resample: unknown part(s) {bad}; use any of {list(RESAMPLE)}")
    if n_boot < 0:
        raise UserError(f"n_boot must be >= 0, got {n_boot}")
    if not 0 < level < 1:
        raise UserError(f"level must be in (0, 1), got {level}")

    point = est.estimate(inputs)
    diagnostics = dict(est.diagnostics_)
    diagnostics.update(estimator=est.name, params=est.get_params(), n_ref=inputs.n_ref, n_gen=inputs.n_gen,
                       support={d: int(n) for d, n in zip(inputs.domains, domain_support(inputs.ref_labels,
                                                                                          inputs.k))},
                       n_boot=n_boot, seed=seed, level=level, resample=list(resample))

    rng = np.random.default_rng(seed)
    samples, failures, boot_fallbacks = [], Counter(), Counter()
    for _ in range(n_boot):
        rep = replicate(inputs, rng, resample)
        b = est.clone()
        try:
            samples.append(b.estimate(rep))
        except (UserError, ValueError, FloatingPointError, np.linalg.LinAlgError, RuntimeError) as exc:
            failures[type(exc).__name__ + ": " + str(exc)[:120]] += 1
            continue
        for f in b.diagnostics_.get("fallbacks", []):
            boot_fallbacks[f.split(" ")[0]] += 1
    diagnostics["n_boot_failed"] = int(sum(failures.values()))
    if failures:
        diagnostics["boot_failures"] = dict(failures)
    if boot_fallbacks:
        diagnostics["boot_fallbacks"] = dict(boot_fallbacks)
    k = inputs.k
    if samples:
        s = np.vstack(samples)
        lo, hi = np.percentile(s, [100 * (1 - level) / 2, 100 * (1 + level) / 2], axis=0)
    else:
        s = np.zeros((0, k))
        lo = hi = np.full(k, np.nan)
        if n_boot:
            diagnostics["warnings"] = list(diagnostics.get("warnings", [])) + ["every bootstrap replicate failed"]
    return MixtureEstimate(domains=inputs.domains, estimate=np.asarray(point, dtype=float), ci_low=lo, ci_high=hi,
                           diagnostics=diagnostics, boot_samples=s if keep_samples else None)


def estimate_all(inputs: MixtureInputs, names: Sequence[str] | None = None, **kwargs: Any) -> list[MixtureEstimate]:
    """`estimate()` for several estimators (default: all registered ones) with the same bootstrap settings."""
    return [estimate(n, inputs, **kwargs) for n in (names or list_estimators())]
