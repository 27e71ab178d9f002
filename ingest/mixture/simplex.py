"""Geometry on the probability simplex: Euclidean projection and exact simplex-constrained least squares.

`simplex_lstsq` solves

    minimise ||A x - b||^2   subject to   x >= 0,  sum(x) = 1

exactly (up to floating point), with a primal active-set method (Lawson-Hanson style, adapted to the
equality constraint). Each step solves the equality-constrained least-squares problem on the current free
set through a null-space parametrisation and `numpy.linalg.lstsq` (QR/SVD on A, never the normal equations
A^T A, whose condition number is the square of A's). The KKT conditions are checked at the end:

    g = A^T (A x - b),  nu = -mean(g[free]),  mu_j = g_j + nu >= 0 for every j held at zero.

The problem is convex, so the KKT point is the global minimum; it is unique when A has full column rank.
With a rank-deficient A the minimiser set is an affine piece and the method returns one point of it
(callers that care add a ridge; see `ingest.mixture.estimators`).

QuaPy solves the same problem with SLSQP on ||A x - b|| (not squared; same minimiser) and stops at SLSQP's
default tolerance (ftol 1e-6), so its answers are a few 1e-7 to 1e-5 away from the exact one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def project_simplex(v: np.ndarray) -> np.ndarray:
    """Euclidean projection of a vector onto the probability simplex (Blondel et al. 2014, sort-based).

    Identical to `quapy.functional.projection_simplex_sort`.
    """
    v = np.asarray(v, dtype=float)
    n = v.shape[0]
    u = np.sort(v)[::-1]
    cssv = np.cumsum(u) - 1.0
    ind = np.arange(1, n + 1)
    cond = u - cssv / ind > 0
    rho = ind[cond][-1]
    theta = cssv[cond][-1] / float(rho)
    return np.maximum(v - theta, 0.0)


@dataclass
class SimplexLstsqResult:
    x: np.ndarray
    iterations: int
    status: str  # "optimal" or "max_iter"
    residual_norm: float
    max_kkt_violation: float


def _null_basis(m: int) -> np.ndarray:
    """An orthonormal basis (m, m-1) of {z : sum(z) = 0} (a Householder reflection of the unit vector)."""
    if m == 1:
        return np.zeros((1, 0))
    e = np.ones(m) / np.sqrt(m)
    v = e.copy()
    v[0] += 1.0  # reflect e onto -e_1
    h = np.eye(m) - 2.0 * np.outer(v, v) / (v @ v)
    return h[:, 1:]  # columns orthogonal to e


def _eq_lstsq(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """min ||a y - b|| subject to sum(y) = 1 (no sign constraint); minimum-norm deviation from uniform."""
    m = a.shape[1]
    y0 = np.full(m, 1.0 / m)
    if m == 1:
        return y0
    n = _null_basis(m)
    z, *_ = np.linalg.lstsq(a @ n, b - a @ y0, rcond=None)
    return y0 + n @ z


def simplex_lstsq(a: np.ndarray, b: np.ndarray, *, max_iter: int | None = None,
                  tol: float = 1e-12) -> SimplexLstsqResult:
    """Exact minimiser of ||a x - b||^2 over the probability simplex (see the module docstring)."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    k = a.shape[1]
    scale = max(1.0, float(np.linalg.norm(a, 2)) ** 2)
    dual_tol = tol * scale * 10
    max_iter = max_iter if max_iter is not None else 20 * k + 100
    x = np.full(k, 1.0 / k)
    free = np.ones(k, dtype=bool)
    status = "max_iter"
    it = 0
    for it in range(1, max_iter + 1):
        idx = np.flatnonzero(free)
        y = _eq_lstsq(a[:, idx], b)
        if np.all(y >= 0):
            x = np.zeros(k)
            x[idx] = y
            g = a.T @ (a @ x - b)
            nu = -float(np.mean(g[idx]))
            fixed = np.flatnonzero(~free)
            if fixed.size == 0:
                status = "optimal"
                break
            mu = g[fixed] + nu
            j = int(np.argmin(mu))
            if mu[j] >= -dual_tol:
                status = "optimal"
                break
            free[fixed[j]] = True
        else:
            d = y - x[idx]
            neg = d < 0
            steps = x[idx][neg] / -d[neg]
            t = int(np.argmin(steps))
            alpha = float(np.clip(steps[t], 0.0, 1.0))
            x[idx] = x[idx] + alpha * d
            blocking = idx[np.flatnonzero(neg)[t]]
            x[blocking] = 0.0
            free[blocking] = False
            x = np.maximum(x, 0.0)
            x /= x.sum()
    x = np.maximum(x, 0.0)
    x /= x.sum()
    g = a.T @ (a @ x - b)
    on = x > 0
    nu = -float(np.mean(g[on]))
    viol = float(np.max(np.abs(g[on] + nu))) if on.any() else 0.0
    if (~on).any():
        viol = max(viol, float(max(0.0, -np.min(g[~on] + nu))))
    return SimplexLstsqResult(x=x, iterations=it, status=status,
                              residual_norm=float(np.linalg.norm(a @ x - b)), max_kkt_violation=viol)
