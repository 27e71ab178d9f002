"""Temperature scaling (TS) and bias-corrected temperature scaling (BCTS) on given posteriors.

This is the calibration QuaPy's `EMQ(calib='bcts')` uses (from the `abstention` package, Alexandari et al.
2020), re-implemented with the same objective, gradient, starting point, bounds and optimiser settings so
that the two agree to floating point:

- logits are recovered from posteriors as z = log p - mean(log p) (a softmax is invariant to the shift);
  posteriors are clipped at `LOG_FLOOR` first so an exact 0 does not give -inf (abstention would give NaN);
- calibrated p' = softmax(z / T + b), T > 0, b in R^K (b = 0 for TS);
- (T, b) minimise the mean negative log-likelihood of the true labels, by L-BFGS-B from T = 1, b = 0,
  bounds T in [0, inf), tol 1e-7.

A failed optimisation leaves the posteriors uncalibrated and says so (QuaPy's `on_calib_error='backup'`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.optimize
import scipy.special

LOG_FLOOR = 1e-12


def inverse_softmax(p: np.ndarray) -> np.ndarray:
    logp = np.log(np.maximum(p, LOG_FLOOR))
    return logp - np.mean(logp, axis=1)[:, None]


def _softmax(z: np.ndarray, temp: float, biases: np.ndarray) -> np.ndarray:
    # scipy's softmax shifts by the row maximum: a small fitted temperature on confident posteriors
    # (logits of +-27 from the 1e-12 floor) would otherwise overflow exp and give NaN rows
    return scipy.special.softmax(z / temp + biases[None, :], axis=1)


@dataclass
class Calibrator:
    kind: str  # "ts", "bcts" or "none"
    temperature: float = 1.0
    biases: np.ndarray | None = None
    success: bool = True
    message: str = ""
    iterations: int = 0

    def __call__(self, p: np.ndarray) -> np.ndarray:
        if self.kind == "none" or not self.success:
            return p
        b = self.biases if self.biases is not None else np.zeros(p.shape[1])
        return _softmax(inverse_softmax(p), self.temperature, b)


def fit_calibrator(posteriors: np.ndarray, labels: np.ndarray, kind: str = "bcts") -> Calibrator:
    """Fit TS or BCTS on held-out posteriors with their true labels (indices)."""
    if kind in (None, "none"):
        return Calibrator(kind="none")
    if kind not in ("ts", "bcts"):
        raise ValueError(f"unknown calibration {kind!r}; use 'bcts', 'ts' or 'none'")
    k = posteriors.shape[1]
    y = np.eye(k)[labels]
    z = inverse_softmax(posteriors)
    bias_positions = np.arange(k) if kind == "bcts" else np.arange(0)

    def nll_and_grad(x: np.ndarray):  # abstention's do_tempscale_optimization.eval_func, vectorised
        t = x[0]
        bs = np.zeros(k)
        bs[bias_positions] = x[1:]
        tsb = z / float(t) + bs[None, :]
        log_sum_exp = scipy.special.logsumexp(a=tsb, axis=1)
        exp_tsb = np.exp(tsb)
        sum_exp = np.sum(exp_tsb, axis=1)
        sum_preact_times_exp = np.sum(z * exp_tsb, axis=1)
        z_true = np.sum(z * y, axis=1)
        tsb_true = np.sum(tsb * y, axis=1)
        nll = -np.mean(tsb_true - log_sum_exp)
        grads_t = (sum_preact_times_exp / sum_exp - z_true) / (float(t) ** 2)
        grads_b = y - exp_tsb / sum_exp[:, None]
        return nll, np.concatenate([[-np.mean(grads_t)], -np.mean(grads_b, axis=0)[bias_positions]])

    with np.errstate(all="ignore"):
        res = scipy.optimize.minimize(fun=nll_and_grad, x0=np.array([1.0] + [0.0] * len(bias_positions)),
                                      bounds=[(0, None)] + [(None, None)] * len(bias_positions), jac=True,
                                      method="L-BFGS-B", tol=1e-07)
    biases = np.zeros(k)
    biases[bias_positions] = res.x[1:]
    ok = bool(res.success) and np.all(np.isfinite(res.x)) and res.x[0] > 0
    return Calibrator(kind=kind, temperature=float(res.x[0]), biases=biases, success=ok,
                      message=str(res.message), iterations=int(res.nit))
