"""Typed records of the mixture library: what goes in (`MixtureInputs`) and what comes out (`MixtureEstimate`).

All posteriors are (n, K) float arrays whose columns follow `domains`. Reference documents carry their true
domain (an index into `domains`, or the domain name) and, optionally, the cross-fitting fold that scored
them. Validation happens when the record is built, so every estimator sees clean arrays:

- NaN/inf or negative posteriors, a row that does not sum to 1 (tolerance `ROW_SUM_TOL`), a wrong number of
  columns, labels outside the domains, mismatched lengths, duplicate domains: `UserError`.
- A domain with no reference documents: `UserError` (its row of C cannot be estimated; drop the domain or
  import reference documents for it).
- Rows within the tolerance are renormalised exactly (posteriors stored as float32 sum to 1 +- 1e-7).
- Zero generations are allowed in the record (so a reference-only record can give the confusion matrices);
  `estimate()` refuses it with a `UserError`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ingest.errors import UserError

ROW_SUM_TOL = 1e-3


def _posteriors(name: str, arr: Any, k: int, *, allow_empty: bool = False) -> np.ndarray:
    try:
        p = np.asarray(arr, dtype=float)
    except (TypeError, ValueError) as exc:
        raise UserError(f"{name}: not a numeric array ({exc})") from None
    if p.ndim == 1 and p.size == 0:
        p = p.reshape(0, k)
    if p.ndim != 2:
        raise UserError(f"{name}: expected an (n, K) array of posteriors, got shape {p.shape}")
    if p.shape[1] != k:
        raise UserError(f"{name}: has {p.shape[1]} columns but there are {k} domains (K mismatch: "
                        f"score with the classifier trained on these domains)")
    if p.shape[0] == 0:
        if allow_empty:
            return p.copy()
        raise UserError(f"{name}: no rows")
    if not np.all(np.isfinite(p)):
        bad = int(np.flatnonzero(~np.all(np.isfinite(p), axis=1))[0])
        raise UserError(f"{name}: row {bad} has NaN or infinite posteriors; rescore those documents")
    if np.any(p < 0):
        bad = int(np.flatnonzero(np.any(p < 0, axis=1))[0])
        raise UserError(f"{name}: row {bad} has negative posteriors (got logits or decision scores? "
                        f"pass probabilities)")
    s = p.sum(axis=1)
    off = np.abs(s - 1.0) > ROW_SUM_TOL
    if off.any():
        bad = int(np.flatnonzero(off)[0])
        raise UserError(f"{name}: row {bad} sums to {s[bad]:.6g}, not 1 (posteriors must be normalised; "
                        f"tolerance {ROW_SUM_TOL})")
    return p / s[:, None]


def _labels(name: str, labels: Any, domains: tuple[str, ...], n: int) -> np.ndarray:
    lab = np.asarray(labels)
    if lab.ndim != 1 or lab.shape[0] != n:
        raise UserError(f"{name}: expected {n} labels (one per posterior row), got shape {lab.shape}")
    if n == 0:
        return lab.astype(int)
    if lab.dtype.kind in "iu":
        out = lab.astype(int)
    elif lab.dtype.kind == "f" and np.all(np.isfinite(lab)) and np.all(lab == np.round(lab)):
        out = lab.astype(int)
    else:
        index = {d: i for i, d in enumerate(domains)}
        unknown = sorted({str(x) for x in lab if str(x) not in index})
        if unknown:
            raise UserError(f"{name}: unknown domain(s) {unknown[:5]}; known: {list(domains)}")
        out = np.array([index[str(x)] for x in lab], dtype=int)
    if out.min() < 0 or out.max() >= len(domains):
        raise UserError(f"{name}: label indices must be in 0..{len(domains) - 1}, got {out.min()}..{out.max()}")
    return out


@dataclass(frozen=True, eq=False)
class MixtureInputs:
    """Everything an estimator needs, as arrays.

    domains: the K domain names, in column order of every posterior array.
    ref_posteriors (n_ref, K), ref_labels (n_ref,): cross-fitted posteriors of the reference documents
        (each scored by a model that did not train on it) and their true domains (indices or names).
    ref_folds (n_ref,) or None: the cross-fitting fold of each reference document.
    calib_posteriors / calib_labels: an optional held-out calibration/validation set (used by `emq` for BCTS
        and by `llmsurgeon_code` for its split). Without it those estimators use the reference set.
    gen_posteriors (n_gen, K): posteriors of the model's generations (may be empty in the record).
    """

    domains: tuple[str, ...]
    ref_posteriors: np.ndarray
    ref_labels: np.ndarray
    gen_posteriors: np.ndarray
    ref_folds: np.ndarray | None = None
    calib_posteriors: np.ndarray | None = None
    calib_labels: np.ndarray | None = None

    def __post_init__(self) -> None:
        domains = tuple(str(d) for d in self.domains)
        if len(domains) < 2:
            raise UserError(f"need at least 2 domains, got {len(domains)}")
        if len(set(domains)) != len(domains):
            dup = sorted({d for d in domains if domains.count(d) > 1})
            raise UserError(f"duplicate domain names {dup}")
        k = len(domains)
        object.__setattr__(self, "domains", domains)
        ref = _posteriors("reference posteriors", self.ref_posteriors, k)
        object.__setattr__(self, "ref_posteriors", ref)
        lab = _labels("reference labels", self.ref_labels, domains, ref.shape[0])
        object.__setattr__(self, "ref_labels", lab)
        support = np.bincount(lab, minlength=k)
        empty = [domains[i] for i in np.flatnonzero(support == 0)]
        if empty:
            raise UserError(f"domain(s) {empty} have no reference documents: import reference documents for "
                            f"them or drop them from the domain list")
        gen = self.gen_posteriors
        if gen is None:
            gen = np.zeros((0, k))
        object.__setattr__(self, "gen_posteriors", _posteriors("generation posteriors", gen, k, allow_empty=True))
        if self.ref_folds is not None:
            folds = np.asarray(self.ref_folds)
            if folds.ndim != 1 or folds.shape[0] != ref.shape[0]:
                raise UserError(f"reference folds: expected {ref.shape[0]} fold ids, got shape {folds.shape}")
            object.__setattr__(self, "ref_folds", folds)
        if (self.calib_posteriors is None) != (self.calib_labels is None):
            raise UserError("calibration set: give both calib_posteriors and calib_labels, or neither")
        if self.calib_posteriors is not None:
            cal = _posteriors("calibration posteriors", self.calib_posteriors, k)
            object.__setattr__(self, "calib_posteriors", cal)
            object.__setattr__(self, "calib_labels",
                               _labels("calibration labels", self.calib_labels, domains, cal.shape[0]))

    @property
    def k(self) -> int:
        return len(self.domains)

    @property
    def n_ref(self) -> int:
        return int(self.ref_posteriors.shape[0])

    @property
    def n_gen(self) -> int:
        return int(self.gen_posteriors.shape[0])

    @property
    def support(self) -> np.ndarray:
        """Number of reference documents per domain."""
        return np.bincount(self.ref_labels, minlength=self.k)

    @property
    def ref_prevalence(self) -> np.ndarray:
        return self.support / self.support.sum()

    def replace(self, **changes: Any) -> MixtureInputs:
        """A copy with some fields replaced (validated again)."""
        fields = dict(domains=self.domains, ref_posteriors=self.ref_posteriors, ref_labels=self.ref_labels,
                      gen_posteriors=self.gen_posteriors, ref_folds=self.ref_folds,
                      calib_posteriors=self.calib_posteriors, calib_labels=self.calib_labels)
        fields.update(changes)
        return MixtureInputs(**fields)

    def _resampled(self, ref_idx: np.ndarray | None, gen_idx: np.ndarray | None,
                   cal_idx: np.ndarray | None) -> MixtureInputs:
        """A bootstrap replicate (no re-validation: rows of valid arrays are valid)."""
        new = object.__new__(MixtureInputs)
        object.__setattr__(new, "domains", self.domains)
        r = slice(None) if ref_idx is None else ref_idx
        object.__setattr__(new, "ref_posteriors", self.ref_posteriors[r])
        object.__setattr__(new, "ref_labels", self.ref_labels[r])
        object.__setattr__(new, "ref_folds", None if self.ref_folds is None else self.ref_folds[r])
        g = slice(None) if gen_idx is None else gen_idx
        object.__setattr__(new, "gen_posteriors", self.gen_posteriors[g])
        if self.calib_posteriors is None:
            object.__setattr__(new, "calib_posteriors", None)
            object.__setattr__(new, "calib_labels", None)
        else:
            c = slice(None) if cal_idx is None else cal_idx
            object.__setattr__(new, "calib_posteriors", self.calib_posteriors[c])
            object.__setattr__(new, "calib_labels", self.calib_labels[c])
        return new


def _jsonable(x: Any) -> Any:
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return _jsonable(x.tolist())
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (np.floating, float)):
        v = float(x)
        return v if math.isfinite(v) else ("inf" if v > 0 else "-inf" if v < 0 else "nan")
    if isinstance(x, (np.bool_,)):
        return bool(x)
    return x


@dataclass
class MixtureEstimate:
    """One estimator's answer: a point on the simplex, a percentile interval per domain, diagnostics.

    diagnostics always has: estimator, params, condition_number (of the C the estimator inverts; None where
    it uses no C), iterations, solver_status, fallbacks (list of strings; empty when none were needed),
    warnings, support (reference documents per domain), n_ref, n_gen, and the bootstrap settings
    (n_boot, n_boot_failed, seed, level, resample).
    """

    domains: tuple[str, ...]
    estimate: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    diagnostics: dict[str, Any] = field(default_factory=dict)
    boot_samples: np.ndarray | None = None  # (n_boot_ok, K) when keep_samples=True

    @property
    def estimator(self) -> str:
        return str(self.diagnostics.get("estimator", ""))

    def as_dict(self) -> dict[str, float]:
        return {d: float(v) for d, v in zip(self.domains, self.estimate)}

    def diagnostics_json(self) -> str:
        return json.dumps(_jsonable(self.diagnostics), sort_keys=True)

    def to_rows(self, **extra: Any) -> list[dict[str, Any]]:
        """One row per domain (estimator, domain, estimate, ci_low, ci_high, plus `extra`), for a dbt model."""
        return [dict(extra, estimator=self.estimator, domain=d, estimate=float(e), ci_low=float(lo),
                     ci_high=float(hi))
                for d, e, lo, hi in zip(self.domains, self.estimate, self.ci_low, self.ci_high)]


def as_domain_vector(domains: Sequence[str], values: dict[str, float] | Sequence[float]) -> np.ndarray:
    """A mixture given as {domain: share} or a sequence, as a vector in `domains` order (missing = 0)."""
    if isinstance(values, dict):
        unknown = sorted(set(values) - set(domains))
        if unknown:
            raise UserError(f"mixture names unknown domain(s) {unknown}; known: {list(domains)}")
        return np.array([float(values.get(d, 0.0)) for d in domains])
    v = np.asarray(values, dtype=float)
    if v.shape != (len(domains),):
        raise UserError(f"mixture has {v.shape} entries, expected {len(domains)}")
    return v
