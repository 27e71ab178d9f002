"""Why `pacc` equals `rlls` and `acc` equals `bbse` on the sandbox, and when they part (issue 28).

Theory, checked here against a plain linear solve (numpy), not against our own estimators:
- ACC solves  C_hard^T pi = q_hard  over the simplex; BBSE solves  J w = q_hard,  w >= 0, with
  J = C_hard^T diag(p_ref), and returns w * p_ref normalised. Put v = diag(p_ref) w: both look for the same
  non-negative solution of the same system, so whenever the exact solution lies inside the simplex they
  return it, digit for digit.
- PACC solves  C_soft^T pi = p_bar; RLLS minimises ||J theta - b|| + rho ||theta|| (norms, not squares) with
  b = q - p_hat and p_hat = C_soft^T p_ref on the same reference set, so J (1 + theta) = q: for a small rho the
  unsquared ridge is an exact penalty and the minimiser is the exact solution again.
Where the exact solution leaves the simplex (or rho is large) they differ: the equality on the sandbox is the
theory at work, not a wiring bug.
"""

from __future__ import annotations

import numpy as np
import pytest

from ingest.mixture import bootstrap as mb
from ingest.mixture.records import MixtureInputs

K = 3
DOMAINS = ("code", "docs", "licence")


def _reference(rng: np.random.Generator, n_per: int = 200) -> tuple[np.ndarray, np.ndarray]:
    """Noisy but informative posteriors: domain i puts most of its mass on column i."""
    post, lab = [], []
    for i in range(K):
        alpha = np.full(K, 1.0)
        alpha[i] = 6.0
        post.append(rng.dirichlet(alpha, size=n_per))
        lab += [i] * n_per
    return np.vstack(post), np.array(lab)


def _generations(rng: np.random.Generator, ref: np.ndarray, lab: np.ndarray, pi: np.ndarray,
                 n: int = 3000) -> np.ndarray:
    """Generations drawn from the reference documents' posteriors with domain shares `pi` (label shift)."""
    doms = rng.choice(K, size=n, p=pi)
    return np.vstack([ref[rng.choice(np.flatnonzero(lab == d))] for d in doms])


def _exact(c_rows: np.ndarray, q: np.ndarray) -> np.ndarray:
    """The oracle: the exact solution of C^T pi = q (C's row i = what domain i looks like to the classifier)."""
    return np.linalg.solve(c_rows.T, q)


def _soft_c(ref, lab):
    return np.vstack([ref[lab == i].mean(axis=0) for i in range(K)])


def _hard_c(ref, lab):
    hard = np.eye(K)[ref.argmax(axis=1)]
    return np.vstack([hard[lab == i].mean(axis=0) for i in range(K)])


def _point(name: str, inputs: MixtureInputs, **params) -> np.ndarray:
    return np.asarray(mb.estimate(name, inputs, n_boot=0, **params).estimate)


@pytest.fixture(scope="module")
def interior():
    rng = np.random.default_rng(7)
    ref, lab = _reference(rng)
    gen = _generations(rng, ref, lab, np.array([0.5, 0.3, 0.2]))
    return ref, lab, gen, MixtureInputs(DOMAINS, ref, lab, gen)


def test_pacc_and_rlls_both_equal_the_exact_solve_inside_the_simplex(interior) -> None:
    ref, lab, gen, inputs = interior
    oracle = _exact(_soft_c(ref, lab), gen.mean(axis=0))
    assert np.all(oracle > 0), "the fixture must have an interior solution"
    np.testing.assert_allclose(_point("pacc", inputs), oracle, atol=1e-6)
    np.testing.assert_allclose(_point("rlls", inputs), oracle, atol=1e-5)


def test_acc_and_bbse_both_equal_the_exact_solve_inside_the_simplex(interior) -> None:
    ref, lab, gen, inputs = interior
    q = np.bincount(gen.argmax(axis=1), minlength=K) / gen.shape[0]
    oracle = _exact(_hard_c(ref, lab), q)
    assert np.all(oracle > 0)
    np.testing.assert_allclose(_point("acc", inputs), oracle, atol=1e-6)
    np.testing.assert_allclose(_point("bbse", inputs), oracle, atol=1e-9)


def test_they_part_when_the_exact_solution_leaves_the_simplex() -> None:
    """Generations that look 'more code than code' (all-code posteriors): the exact solve has a negative share.
    ACC/PACC project onto the simplex by least squares; BBSE clips weights by NNLS in another metric; RLLS's
    theta >= -1 bound and ridge give a third answer."""
    rng = np.random.default_rng(11)
    ref, lab = _reference(rng)
    gen = np.tile(np.array([[0.98, 0.01, 0.01]]), (500, 1))
    inputs = MixtureInputs(DOMAINS, ref, lab, gen)
    assert np.min(_exact(_soft_c(ref, lab), gen.mean(axis=0))) < 0
    pacc, rlls = _point("pacc", inputs), _point("rlls", inputs)
    for est in (pacc, rlls):
        assert est.min() >= -1e-12 and abs(est.sum() - 1) < 1e-9
    # ACC and BBSE on a hard q outside the hull of C_hard's rows
    gen_hard = np.vstack([gen[:400], np.tile(np.array([[0.01, 0.98, 0.01]]), (100, 1))])
    hard_inputs = MixtureInputs(DOMAINS, ref, lab, gen_hard)
    q = np.bincount(gen_hard.argmax(axis=1), minlength=K) / gen_hard.shape[0]
    assert np.min(_exact(_hard_c(ref, lab), q)) < 0
    acc, bbse = _point("acc", hard_inputs), _point("bbse", hard_inputs)
    assert np.max(np.abs(acc - bbse)) > 1e-3, (acc, bbse)


def test_a_large_ridge_pulls_rlls_toward_the_reference_shares(interior) -> None:
    """With rho large, RLLS's penalty wins over the residual: theta -> 0, the estimate -> the reference shares
    (here uniform): no longer PACC's answer."""
    ref, lab, gen, inputs = interior
    strong = _point("rlls", inputs, alpha=50.0)
    np.testing.assert_allclose(strong, np.full(K, 1 / K), atol=1e-3)
    assert np.max(np.abs(strong - _point("pacc", inputs))) > 0.05
