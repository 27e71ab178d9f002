"""Mixture estimators behind one interface, with a registry (name -> class), in QuaPy's style.

An `Estimator` is fitted on the reference side of a `MixtureInputs` (cross-fitted reference posteriors,
optional calibration set) and then maps generation posteriors to a point on the simplex:

    est = get_estimator("pacc")
    pi = est.fit(inputs).predict(inputs.gen_posteriors)
    est.diagnostics_   # condition_number, iterations, solver_status, fallbacks, warnings

`ingest.mixture.estimate()` wraps this with the bootstrap. Notation: C is K x K with rows = true domains,
columns = predicted domains (`ingest.mixture.confusion`); p_bar is the observed mean over generations; the
label-shift identity is C^T pi = p_bar.

| name | definition |
|---|---|
| direct | pi = p_bar (QuaPy PCC; the paper's "w/o inverse correction") |
| cc | share of argmax labels (QuaPy CC) |
| acc | hard C, argmax shares, exact simplex-constrained least squares (QuaPy ACC's problem) |
| pacc | soft C, p_bar, exact simplex-constrained least squares (QuaPy PACC's problem; the paper's method) |
| llmsurgeon_code | authors' code: hard C + temperature from one split, confidence-weighted p_bar, lstsq, projection |
| emq | Saerens-Latinne-Decaestecker EM with BCTS (QuaPy EMQ.EMQ_BCTS) |
| bbse | Lipton et al. 2018: joint confusion J, weights w >= 0 (NNLS) with J w = q, pi ~ w * p_ref |
| rlls | Azizzadenesheli et al. 2019: ||J theta - b|| + rho ||theta||, theta >= -1, pi ~ (1 + theta) * p_ref |
| kdey | KDEy-ML (Moreo et al. 2024): Gaussian KDE per domain in posterior space, maximum-likelihood weights |

Fallbacks (always named in `diagnostics_["fallbacks"]`, never silent):
- acc/pacc with a singular C (condition number > `singular_condition`, default 1e10, e.g. a domain that is
  never predicted in hard C): the least-squares problem has many minimisers; a ridge toward the direct
  estimate, `ridge * ||C||^2 * ||pi - p_bar||^2` with ridge = 1e-6, picks the one nearest the uncorrected
  estimate ("singular_C:ridge_to_direct").
- any C with condition number > `warn_condition` (1e3) adds a warning "ill_conditioned_C".
- llmsurgeon_code: a domain absent from the split gets an identity row in hard C ("split_missing_domain:D");
  the authors' lstsq is kept as is (numpy's minimum-norm solution when C is singular).
- emq: a BCTS fit that fails leaves posteriors uncalibrated ("calibration_failed:uncalibrated"), as QuaPy's
  on_calib_error='backup'; no convergence within max_iter gives solver_status "max_iter" and a warning.
- bbse/rlls: all-zero weights give the uniform mixture ("zero_weights:uniform").
"""

from __future__ import annotations

import inspect
from abc import ABC, abstractmethod
from typing import Any, ClassVar

import numpy as np
import scipy.optimize
import scipy.special

from ingest.errors import UserError
from ingest.mixture import confusion as cm
from ingest.mixture.calibration import Calibrator, fit_calibrator
from ingest.mixture.records import MixtureInputs
from ingest.mixture.simplex import project_simplex, simplex_lstsq
from ingest.registry import Registry

ESTIMATORS: Registry[type[Estimator]] = Registry("mixture estimator")


def register(cls: type[Estimator]) -> type[Estimator]:
    """Class decorator: make an estimator available by its `name`."""
    return ESTIMATORS.register()(cls)


def list_estimators() -> list[str]:
    return ESTIMATORS.names()


def get_estimator(name: str, **params: Any) -> Estimator:
    """A fresh estimator by name; unknown names or parameters are a `UserError`."""
    return ESTIMATORS.create(name, **params)


class Estimator(ABC):
    """Base class. Subclasses take keyword parameters only and store them under the same names."""

    name: ClassVar[str]

    def get_params(self) -> dict[str, Any]:
        names = [p for p in inspect.signature(type(self).__init__).parameters if p != "self"]
        return {p: getattr(self, p) for p in names}

    def clone(self) -> Estimator:
        return type(self)(**self.get_params())

    def _reset_diagnostics(self) -> None:
        self.diagnostics_: dict[str, Any] = {"condition_number": None, "iterations": None,
                                             "solver_status": "closed_form", "fallbacks": [], "warnings": []}

    def _start_fit(self, inputs: MixtureInputs) -> None:
        """What every `fit` does first: fresh diagnostics and the number of domains."""
        self._reset_diagnostics()
        self.k_ = inputs.k

    @abstractmethod
    def fit(self, inputs: MixtureInputs) -> Estimator:
        """Learn what is needed from the reference side (C, calibration, densities)."""

    @abstractmethod
    def predict(self, gen_posteriors: np.ndarray) -> np.ndarray:
        """The mixture estimate (a point on the simplex) from generation posteriors."""

    def estimate(self, inputs: MixtureInputs) -> np.ndarray:
        if inputs.n_gen == 0:
            raise UserError("no generations to estimate a mixture from: generate (or import) samples for the run")
        return self.fit(inputs).predict(inputs.gen_posteriors)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"


# --------------------------------------------------------------------------------------------- shared pieces

def _note_condition(est: Estimator, c: np.ndarray, warn_condition: float) -> float:
    cond = cm.condition_number(c)
    est.diagnostics_["condition_number"] = cond
    if cond > warn_condition:
        est.diagnostics_["warnings"].append(f"ill_conditioned_C (condition number {cond:.3g} > {warn_condition:g})")
    return cond


def _solve_on_simplex(est: Estimator, c: np.ndarray, p_bar: np.ndarray, cond: float) -> np.ndarray:
    """Exact argmin over the simplex of ||C^T pi - p_bar||^2, with the singular-C fallback."""
    a, b = c.T, p_bar
    if cond > est.singular_condition:
        lam = est.ridge * float(np.linalg.norm(c, 2)) ** 2
        k = c.shape[0]
        a = np.vstack([a, np.sqrt(lam) * np.eye(k)])
        b = np.concatenate([b, np.sqrt(lam) * p_bar])
        est.diagnostics_["fallbacks"].append(f"singular_C:ridge_to_direct (lambda={lam:.3g})")
    res = simplex_lstsq(a, b)
    est.diagnostics_["iterations"] = res.iterations
    est.diagnostics_["solver_status"] = res.status
    est.diagnostics_["residual_norm"] = float(np.linalg.norm(c.T @ res.x - p_bar))
    if res.status != "optimal":
        est.diagnostics_["warnings"].append("simplex least squares hit max_iter")
    return res.x


def _normalise_weights(est: Estimator, v: np.ndarray) -> np.ndarray:
    v = np.clip(v, 0.0, None)
    s = v.sum()
    if not np.isfinite(s) or s <= 0:
        est.diagnostics_["fallbacks"].append("zero_weights:uniform")
        return np.full(v.shape[0], 1.0 / v.shape[0])
    return v / s


def _check_gen(gen: np.ndarray, k: int) -> np.ndarray:
    gen = np.asarray(gen, dtype=float)
    if gen.ndim != 2 or gen.shape[1] != k:
        raise UserError(f"generation posteriors have shape {gen.shape}; expected (n, {k})")
    if gen.shape[0] == 0:
        raise UserError("no generations to estimate a mixture from: generate (or import) samples for the run")
    return gen


# ----------------------------------------------------------------------------------------------- estimators

class _Uncorrected(Estimator):
    """Estimators that take nothing from the reference set but the number of domains."""

    def __init__(self):
        pass

    def fit(self, inputs):
        self._start_fit(inputs)
        return self


@register
class Direct(_Uncorrected):
    """PCC: the mean generation posterior, no correction."""

    name = "direct"

    def predict(self, gen_posteriors):
        return _check_gen(gen_posteriors, self.k_).mean(axis=0)


@register
class CC(_Uncorrected):
    """Classify and count: the share of argmax labels (ties to the lowest index)."""

    name = "cc"

    def predict(self, gen_posteriors):
        return cm.hard_counts(_check_gen(gen_posteriors, self.k_), self.k_)


@register
class ACC(Estimator):
    """Adjusted classify and count: hard C from the reference set, argmax shares, simplex least squares."""

    name = "acc"

    def __init__(self, warn_condition: float = 1e3, singular_condition: float = 1e10, ridge: float = 1e-6):
        self.warn_condition = warn_condition
        self.singular_condition = singular_condition
        self.ridge = ridge

    def fit(self, inputs):
        self._start_fit(inputs)
        self.C_ = self._confusion(inputs)
        self.cond_ = _note_condition(self, self.C_, self.warn_condition)
        return self

    def _confusion(self, inputs):
        return cm.hard_confusion(inputs.ref_posteriors, inputs.ref_labels, inputs.k)

    def _observed(self, gen):
        return cm.hard_counts(gen, self.k_)

    def predict(self, gen_posteriors):
        gen = _check_gen(gen_posteriors, self.k_)
        return _solve_on_simplex(self, self.C_, self._observed(gen), self.cond_)


@register
class PACC(ACC):
    """Probabilistic ACC (the paper's method as written): soft C, mean posterior, simplex least squares."""

    name = "pacc"

    def _confusion(self, inputs):
        return cm.soft_confusion(inputs.ref_posteriors, inputs.ref_labels, inputs.k)

    def _observed(self, gen):
        return gen.mean(axis=0)


@register
class LLMSurgeonCode(Estimator):
    """The LLMSurgeon authors' released code (docs/mixture-method.md, section 4), reproduced step by step.

    1. The split: the calibration set when given; else the reference documents of one cross-fitting fold
       (`split_fold`, default the smallest fold id: with 5-fold cross-fitting that is a 20% split scored by a
       single model, as in the authors' 80/20 split); else a seeded stratified `split_fraction` sample.
    2. A temperature fitted on the split by NLL (or `temperature` if given) and applied to every posterior.
    3. Hard C = row-normalised argmax counts on the split.
    4. Confidence weighting of generations: u = clip((t - maxprob) / t, 0, 1) with t = 0.9,
       p_bar = mean(p * (1 - u)) / (1 - mean(u)).
    5. pi = lstsq(C^T, p_bar) without constraints, then one Euclidean projection onto the simplex.
    """

    name = "llmsurgeon_code"

    def __init__(self, split_fold: Any = None, split_fraction: float = 0.2, temperature: float | None = None,
                 confidence_threshold: float = 0.9, seed: int = 0, warn_condition: float = 1e3):
        self.split_fold = split_fold
        self.split_fraction = split_fraction
        self.temperature = temperature
        self.confidence_threshold = confidence_threshold
        self.seed = seed
        self.warn_condition = warn_condition

    def _split(self, inputs: MixtureInputs) -> tuple[np.ndarray, np.ndarray, str]:
        if inputs.calib_posteriors is not None:
            return inputs.calib_posteriors, inputs.calib_labels, "calibration set"
        if inputs.ref_folds is not None:
            folds = np.unique(inputs.ref_folds)
            fold = folds[0] if self.split_fold is None else self.split_fold
            mask = inputs.ref_folds == fold
            if not mask.any():
                raise UserError(f"llmsurgeon_code: split_fold {fold!r} has no reference documents; "
                                f"folds are {folds.tolist()}")
            return inputs.ref_posteriors[mask], inputs.ref_labels[mask], f"reference fold {fold}"
        rng = np.random.default_rng(self.seed)
        idx = []
        for d in range(inputs.k):
            members = np.flatnonzero(inputs.ref_labels == d)
            take = max(1, int(round(self.split_fraction * members.size)))
            idx.append(rng.choice(members, size=take, replace=False))
        idx = np.sort(np.concatenate(idx))
        return inputs.ref_posteriors[idx], inputs.ref_labels[idx], f"seeded {self.split_fraction:g} split"

    def fit(self, inputs):
        self._start_fit(inputs)
        p, y, where = self._split(inputs)
        self.diagnostics_["split"] = where
        self.diagnostics_["split_size"] = int(p.shape[0])
        if self.temperature is None:
            cal = fit_calibrator(p, y, "ts")
            if not cal.success:
                self.diagnostics_["fallbacks"].append("temperature_fit_failed:T=1")
                cal = Calibrator(kind="none")
        else:
            cal = Calibrator(kind="ts", temperature=float(self.temperature), biases=np.zeros(inputs.k))
        self.calibrator_ = cal
        self.diagnostics_["temperature"] = cal.temperature if cal.kind != "none" else 1.0
        c = cm.hard_confusion(cal(p), y, inputs.k)
        missing = np.flatnonzero(cm.support(y, inputs.k) == 0)
        for d in missing:
            self.diagnostics_["fallbacks"].append(f"split_missing_domain:{inputs.domains[d]}")
        self.C_ = c
        _note_condition(self, c, self.warn_condition)
        return self

    def weighted_mean(self, p: np.ndarray) -> np.ndarray:
        t = self.confidence_threshold
        u = np.clip((t - p.max(axis=1)) / t, 0.0, 1.0)
        return (p * (1.0 - u)[:, None]).mean(axis=0) / (1.0 - u.mean())

    def predict(self, gen_posteriors):
        gen = self.calibrator_(_check_gen(gen_posteriors, self.k_))
        p_bar = self.weighted_mean(gen)
        x, _res, rank, _sv = np.linalg.lstsq(self.C_.T, p_bar, rcond=None)
        self.diagnostics_["rank"] = int(rank)
        self.diagnostics_["solver_status"] = "lstsq+projection"
        self.diagnostics_["unconstrained_solution"] = x.tolist()
        if rank < self.k_:
            self.diagnostics_["warnings"].append(f"rank-deficient C (rank {rank} < {self.k_}): lstsq minimum norm")
        return project_simplex(x)


@register
class EMQ(Estimator):
    """Saerens-Latinne-Decaestecker EM on the prior, with bias-corrected temperature scaling (QuaPy EMQ_BCTS).

    Calibration set: `calib_*` when given, else the cross-fitted reference posteriors (QuaPy's k-fold
    val_split does the same). The starting prior (and the "training prior" of the E-step ratio) is the mean
    calibrated calibration posterior (`exact_train_prev=False`) or the calibration label shares (True).
    Stops when mean |q_s - q_{s-1}| < epsilon after more than `min_iter` iterations (QuaPy's rule: s > 10),
    or at max_iter.
    """

    name = "emq"

    def __init__(self, calib: str | None = "bcts", exact_train_prev: bool = False, epsilon: float = 1e-4,
                 max_iter: int = 1000, min_iter: int = 10):
        self.calib = calib
        self.exact_train_prev = exact_train_prev
        self.epsilon = epsilon
        self.max_iter = max_iter
        self.min_iter = min_iter

    def fit(self, inputs):
        self._start_fit(inputs)
        if inputs.calib_posteriors is not None:
            p, y, where = inputs.calib_posteriors, inputs.calib_labels, "calibration set"
        else:
            p, y, where = inputs.ref_posteriors, inputs.ref_labels, "cross-fitted reference posteriors"
        self.diagnostics_["calibration_data"] = where
        cal = fit_calibrator(p, y, self.calib or "none")
        if not cal.success:
            self.diagnostics_["fallbacks"].append(f"calibration_failed:uncalibrated ({cal.message})")
        self.calibrator_ = cal
        if cal.kind != "none":
            self.diagnostics_["temperature"] = cal.temperature
            self.diagnostics_["biases"] = cal.biases.tolist()
        if self.exact_train_prev:
            self.train_prev_ = cm.support(y, inputs.k) / y.shape[0]
        else:
            self.train_prev_ = cal(p).mean(axis=0)
        return self

    def predict(self, gen_posteriors):
        px = self.calibrator_(_check_gen(gen_posteriors, self.k_))
        ptr = np.copy(self.train_prev_)
        if np.prod(ptr) == 0:  # QuaPy's smoothing of a zero prior
            ptr += self.epsilon
            ptr /= ptr.sum()
        qs = np.copy(ptr)
        s, converged, prev = 0, False, None
        while not converged and s < self.max_iter:
            ps = (qs / ptr) * px
            ps = ps / ps.sum(axis=1, keepdims=True)
            qs = ps.mean(axis=0)
            if prev is not None and np.abs(qs - prev).mean() < self.epsilon and s > self.min_iter:
                converged = True
            prev = qs
            s += 1
        self.diagnostics_["iterations"] = s
        self.diagnostics_["solver_status"] = "converged" if converged else "max_iter"
        if not converged:
            self.diagnostics_["warnings"].append(f"EM did not converge in {self.max_iter} iterations")
        return qs


@register
class BBSE(Estimator):
    """Black-box shift estimation (Lipton et al. 2018), importance-weight form of ACC.

    J[j, i] = P(yhat = j, y = i) on the reference set (hard by default), q = predicted marginal on the
    generations; w = argmin_{w >= 0} ||J w - q|| (exact NNLS; QuaPy BBSEhard/BBSEsoft minimise the same with
    SLSQP); pi = w * p_ref normalised (p_ref = reference label shares).
    """

    name = "bbse"

    def __init__(self, mode: str = "hard", warn_condition: float = 1e3):
        if mode not in ("hard", "soft"):
            raise UserError(f"bbse: mode must be 'hard' or 'soft', got {mode!r}")
        self.mode = mode
        self.warn_condition = warn_condition

    def fit(self, inputs):
        self._start_fit(inputs)
        self.J_ = cm.joint_confusion(inputs.ref_posteriors, inputs.ref_labels, inputs.k, self.mode)
        self.p_ref_ = inputs.ref_prevalence
        _note_condition(self, self.J_, self.warn_condition)
        return self

    def predict(self, gen_posteriors):
        gen = _check_gen(gen_posteriors, self.k_)
        q = cm.hard_counts(gen, self.k_) if self.mode == "hard" else gen.mean(axis=0)
        w, rnorm = scipy.optimize.nnls(self.J_, q)
        self.diagnostics_["solver_status"] = "nnls"
        self.diagnostics_["residual_norm"] = float(rnorm)
        self.diagnostics_["weights"] = w.tolist()
        return _normalise_weights(self, w * self.p_ref_)


def rlls_delta(k: int, n: int, delta: float) -> float:
    """3 * Delta_C of Azizzadenesheli et al. 2019 (as QuaPy's `_rlls_compute_3deltaC`)."""
    lg = np.log(2 * k / delta)
    return float(3 * (2 * lg / (3 * n) + np.sqrt(2 * lg / n)))


@register
class RLLS(Estimator):
    """Regularised learning under label shift (Azizzadenesheli et al. 2019), as QuaPy's RLLS defines it.

    theta = argmin ||J theta - b||_2 + rho ||theta||_2 subject to theta >= -1, with b = q - p_hat (predicted
    marginal on generations minus on the reference set), rho = alpha * 3 Delta_C(K, n_ref, delta); the ridge
    pulls toward theta = 0, i.e. no shift (pi = p_ref), which is what steadies an ill-conditioned C.
    pi = (1 + theta) * p_ref, normalised. QuaPy solves this with cvxpy/SCS (not installed here); we use
    SLSQP on the same objective with the two norms smoothed by 1e-12 and a tight tolerance (ftol 1e-12).
    """

    name = "rlls"

    def __init__(self, mode: str = "soft", alpha: float = 0.01, delta: float = 0.05, warn_condition: float = 1e3):
        if mode not in ("hard", "soft"):
            raise UserError(f"rlls: mode must be 'hard' or 'soft', got {mode!r}")
        if alpha < 0 or not (0 < delta < 1):
            raise UserError(f"rlls: need alpha >= 0 and 0 < delta < 1 (got alpha={alpha}, delta={delta})")
        self.mode = mode
        self.alpha = alpha
        self.delta = delta
        self.warn_condition = warn_condition

    def fit(self, inputs):
        self._start_fit(inputs)
        self.J_ = cm.joint_confusion(inputs.ref_posteriors, inputs.ref_labels, inputs.k, self.mode)
        self.p_ref_ = inputs.ref_prevalence
        ref = inputs.ref_posteriors
        self.p_hat_ = cm.hard_counts(ref, inputs.k) if self.mode == "hard" else ref.mean(axis=0)
        self.rho_ = self.alpha * rlls_delta(inputs.k, inputs.n_ref, self.delta)
        self.diagnostics_["rho"] = self.rho_
        _note_condition(self, self.J_, self.warn_condition)
        return self

    def predict(self, gen_posteriors):
        gen = _check_gen(gen_posteriors, self.k_)
        q = cm.hard_counts(gen, self.k_) if self.mode == "hard" else gen.mean(axis=0)
        b = q - self.p_hat_
        j, rho, tau = self.J_, self.rho_, 1e-24

        def f(theta):
            r = j @ theta - b
            nr = np.sqrt(r @ r + tau)
            nt = np.sqrt(theta @ theta + tau)
            return nr + rho * nt, j.T @ r / nr + rho * theta / nt

        res = scipy.optimize.minimize(f, np.zeros(self.k_), jac=True, method="SLSQP",
                                      bounds=[(-1.0, None)] * self.k_, options={"ftol": 1e-12, "maxiter": 1000})
        self.diagnostics_["iterations"] = int(res.nit)
        self.diagnostics_["solver_status"] = "optimal" if res.success else f"slsqp: {res.message}"
        if not res.success:
            self.diagnostics_["warnings"].append(f"rlls solver: {res.message}")
        w = 1.0 + np.asarray(res.x)
        self.diagnostics_["weights"] = w.tolist()
        return _normalise_weights(self, w * self.p_ref_)


@register
class KDEy(Estimator):
    """KDEy-ML: a Gaussian KDE (bandwidth h) per domain over the reference posteriors; pi maximises the
    likelihood of the generation posteriors under sum_k pi_k KDE_k (SLSQP with the analytic gradient)."""

    name = "kdey"

    def __init__(self, bandwidth: float = 0.1, chunk: int = 2048):
        if bandwidth <= 0:
            raise UserError(f"kdey: bandwidth must be > 0, got {bandwidth}")
        self.bandwidth = bandwidth
        self.chunk = chunk

    def fit(self, inputs):
        self._start_fit(inputs)
        self.centres_ = [inputs.ref_posteriors[inputs.ref_labels == d] for d in range(inputs.k)]
        return self

    def log_densities(self, x: np.ndarray) -> np.ndarray:
        """log KDE_k(x) up to a constant shared by all k, shape (n, K)."""
        h2 = 2.0 * self.bandwidth ** 2
        out = np.empty((x.shape[0], self.k_))
        xx = (x * x).sum(axis=1)
        for d, c in enumerate(self.centres_):
            cc = (c * c).sum(axis=1)
            for s in range(0, x.shape[0], self.chunk):
                xs = x[s:s + self.chunk]
                d2 = np.maximum(xx[s:s + self.chunk, None] + cc[None, :] - 2.0 * xs @ c.T, 0.0)
                out[s:s + self.chunk, d] = scipy.special.logsumexp(-d2 / h2, axis=1) - np.log(c.shape[0])
        return out

    def predict(self, gen_posteriors):
        gen = _check_gen(gen_posteriors, self.k_)
        logd = self.log_densities(gen)
        dens = np.exp(logd - logd.max(axis=1, keepdims=True))
        n = dens.shape[0]

        def nll(pi):
            m = dens @ pi + 1e-300
            return -np.log(m).sum() / n, -(dens / m[:, None]).sum(axis=0) / n

        k = self.k_
        res = scipy.optimize.minimize(nll, np.full(k, 1.0 / k), jac=True, method="SLSQP",
                                      bounds=[(0.0, 1.0)] * k,
                                      constraints=({"type": "eq", "fun": lambda p: 1.0 - p.sum(),
                                                    "jac": lambda p: -np.ones(k)},),
                                      options={"ftol": 1e-12, "maxiter": 1000})
        self.diagnostics_["iterations"] = int(res.nit)
        self.diagnostics_["solver_status"] = "optimal" if res.success else f"slsqp: {res.message}"
        if not res.success:
            self.diagnostics_["warnings"].append(f"kdey solver: {res.message}")
        x = np.clip(res.x, 0.0, None)
        return x / x.sum()
