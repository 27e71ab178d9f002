"""Estimator library: the authors'-code variant by hand, the solver, fallbacks, registry and the bootstrap."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.optimize

from ingest.mixture import (MixtureInputs, confusion_summary, estimate, get_estimator, list_estimators,
                            project_simplex, simplex_lstsq)
from ingest.mixture.synthetic import GaussianProblem


@pytest.fixture(scope="module")
def problem():
    return GaussianProblem(k=3, dim=5, separation=2.2, n_ref_per_domain=300, seed=10)


# ---------------------------------------------------------------------------------------- llmsurgeon_code

def hand_example(**over) -> MixtureInputs:
    """Split: domain 0 predicted [0,0,0,0,1], domain 1 [1,1,1,1,0], domain 2 [2,2] -> hard C =
    [[.8,.2,0],[.2,.8,0],[0,0,1]]. Generations (T = 1):
      g1 = [.95,.02,.03] maxprob .95 -> u = 0;   g2 = [.6,.1,.3] -> u = 1/3;   g3 = [.2,.05,.75] -> u = 1/6.
    mean(u) = 1/6; p_bar = mean(p (1-u)) / (5/6) = [91/150, 77/1500, 0.342].
    lstsq (C invertible): pi = C^-1 p_bar = [3563, -602, 1539] / 4500.
    projection: sorted [3563, 1539, -602]/4500, rho = 2, theta = 301/4500 -> [3262, 0, 1238] / 4500."""
    hi, lo = [0.7, 0.2, 0.1], [0.3, 0.6, 0.1]
    split = np.array([hi] * 4 + [lo] + [[0.2, 0.7, 0.1]] * 4 + [[0.6, 0.3, 0.1]] + [[0.1, 0.1, 0.8]] * 2)
    split_y = np.array([0] * 5 + [1] * 5 + [2] * 2)
    ref = np.array([[0.5, 0.3, 0.2], [0.3, 0.5, 0.2], [0.2, 0.2, 0.6]])
    gen = np.array([[0.95, 0.02, 0.03], [0.6, 0.1, 0.3], [0.2, 0.05, 0.75]])
    fields = dict(domains=["web", "code", "books"], ref_posteriors=ref, ref_labels=[0, 1, 2], gen_posteriors=gen,
                  calib_posteriors=split, calib_labels=split_y)
    fields.update(over)
    return MixtureInputs(**fields)


def test_llmsurgeon_code_hand_computed():
    est = get_estimator("llmsurgeon_code", temperature=1.0)
    pi = est.estimate(hand_example())
    assert np.allclose(est.C_, [[0.8, 0.2, 0.0], [0.2, 0.8, 0.0], [0.0, 0.0, 1.0]])
    p_bar = est.weighted_mean(hand_example().gen_posteriors)
    assert np.allclose(p_bar, [91 / 150, 77 / 1500, 0.342], atol=1e-9)
    assert np.allclose(est.diagnostics_["unconstrained_solution"], np.array([3563, -602, 1539]) / 4500, atol=1e-9)
    assert np.allclose(pi, np.array([3262, 0, 1238]) / 4500, atol=1e-9)
    assert est.diagnostics_["split"] == "calibration set"


def test_llmsurgeon_code_uses_one_fold_and_fits_a_temperature(problem):
    inp = problem.inputs(problem.sample([0.5, 0.3, 0.2], 600))
    est = get_estimator("llmsurgeon_code")
    pi = est.estimate(inp)
    assert est.diagnostics_["split"] == "reference fold 0"
    assert est.diagnostics_["split_size"] == int((problem.ref_folds == 0).sum())  # 20% with 5 folds
    assert 0.2 < est.diagnostics_["temperature"] < 5
    assert np.isclose(pi.sum(), 1) and np.all(pi >= 0)
    no_folds = inp.replace(ref_folds=None)
    est2 = get_estimator("llmsurgeon_code")
    est2.estimate(no_folds)
    assert est2.diagnostics_["split"].startswith("seeded 0.2")


def test_projection_matches_definition():
    rng = np.random.default_rng(0)
    for _ in range(50):
        v = rng.normal(0, 1, 5)
        x = project_simplex(v)
        ref = scipy.optimize.minimize(lambda z: ((z - v) ** 2).sum(), np.full(5, 0.2), method="SLSQP",
                                      bounds=[(0, 1)] * 5, constraints={"type": "eq", "fun": lambda z: z.sum() - 1},
                                      options={"ftol": 1e-15})
        assert np.allclose(x, ref.x, atol=1e-6)


def test_simplex_lstsq_is_the_exact_minimiser():
    rng = np.random.default_rng(1)
    for _ in range(60):
        k = int(rng.integers(2, 9))
        a = rng.random((k, k)) + np.eye(k) * 2 * rng.random()
        a /= a.sum(axis=0, keepdims=True)
        b = a @ rng.dirichlet(np.full(k, 0.4)) + rng.normal(0, 0.05, k)
        res = simplex_lstsq(a, b)
        ref = scipy.optimize.minimize(lambda x: ((a @ x - b) ** 2).sum(), np.full(k, 1 / k),
                                      jac=lambda x: 2 * a.T @ (a @ x - b), method="SLSQP", bounds=[(0, 1)] * k,
                                      constraints={"type": "eq", "fun": lambda x: 1 - x.sum()},
                                      options={"ftol": 1e-16, "maxiter": 1000})
        assert res.status == "optimal" and res.max_kkt_violation < 1e-9
        assert np.isclose(res.x.sum(), 1) and np.all(res.x >= 0)
        assert ((a @ res.x - b) ** 2).sum() <= ref.fun + 1e-12
        assert np.max(np.abs(res.x - ref.x)) < 1e-6


# ------------------------------------------------------------------------------------- every estimator

def test_registry_and_every_estimator_recovers_an_easy_mixture(problem):
    names = list_estimators()
    assert {"direct", "cc", "acc", "pacc", "llmsurgeon_code", "emq", "bbse", "rlls", "kdey"} <= set(names)
    alpha = np.array([0.6, 0.3, 0.1])
    inp = problem.inputs(problem.sample(alpha, 3000))
    errors = {}
    for n in names:
        est = get_estimator(n)
        pi = est.estimate(inp)
        assert pi.shape == (3,) and np.all(pi >= 0) and np.isclose(pi.sum(), 1), n
        for key in ("condition_number", "iterations", "solver_status", "fallbacks", "warnings"):
            assert key in est.diagnostics_, (n, key)
        errors[n] = 0.5 * np.abs(pi - alpha).sum()
    for n in ("acc", "pacc", "emq", "bbse", "rlls", "kdey", "llmsurgeon_code"):
        assert errors[n] < 0.05, (n, errors[n])
    assert errors["pacc"] < errors["direct"]  # the correction helps


def test_get_estimator_params_and_clone():
    e = get_estimator("rlls", alpha=0.1)
    assert e.get_params()["alpha"] == 0.1 and e.clone().get_params() == e.get_params()
    assert "pacc" in repr(get_estimator("pacc")) or "PACC" in repr(get_estimator("pacc"))


def test_confusion_summary(problem):
    s = confusion_summary(problem.inputs(np.zeros((0, 3))))
    assert np.allclose(s.soft.sum(axis=1), 1) and np.allclose(s.hard.sum(axis=1), 1)
    assert s.support.tolist() == [300, 300, 300]
    assert 1 <= s.soft_condition_number < 10
    rows = s.to_rows(classifier_id="c1")
    assert len(rows) == 2 * 9 and rows[0]["classifier_id"] == "c1"


def test_singular_hard_c_falls_back_and_says_so():
    # domain 2 is never predicted: hard C has a zero column, so C is singular
    ref = np.array([[0.9, 0.05, 0.05], [0.1, 0.85, 0.05], [0.6, 0.3, 0.1], [0.3, 0.6, 0.1]])
    inp = MixtureInputs(domains=["a", "b", "c"], ref_posteriors=ref, ref_labels=[0, 1, 2, 2],
                        gen_posteriors=np.array([[0.8, 0.1, 0.1], [0.2, 0.7, 0.1]]))
    est = get_estimator("acc")
    pi = est.estimate(inp)
    assert est.diagnostics_["condition_number"] == float("inf")
    assert any(f.startswith("singular_C:ridge_to_direct") for f in est.diagnostics_["fallbacks"])
    assert np.isclose(pi.sum(), 1) and np.all(pi >= 0)
    assert any("ill_conditioned" in w for w in est.diagnostics_["warnings"])


# ------------------------------------------------------------------------------------------- bootstrap

def test_bootstrap_is_seeded_and_reports(problem):
    inp = problem.inputs(problem.sample([0.5, 0.3, 0.2], 500))
    a = estimate("pacc", inp, n_boot=30, seed=5)
    b = estimate("pacc", inp, n_boot=30, seed=5)
    c = estimate("pacc", inp, n_boot=30, seed=6)
    assert np.array_equal(a.ci_low, b.ci_low) and np.array_equal(a.ci_high, b.ci_high)
    assert not np.array_equal(a.ci_low, c.ci_low)
    assert np.all(a.ci_low <= a.ci_high)
    d = json.loads(a.diagnostics_json())
    assert d["estimator"] == "pacc" and d["n_boot"] == 30 and d["n_boot_failed"] == 0
    assert d["support"] == {"d0": 300, "d1": 300, "d2": 300}
    rows = a.to_rows(run_id="r1")
    assert [r["domain"] for r in rows] == ["d0", "d1", "d2"] and rows[0]["run_id"] == "r1"
    # resampling the reference too widens the interval compared with generations only
    g = estimate("pacc", inp, n_boot=60, seed=1, resample=["generations"])
    both = estimate("pacc", inp, n_boot=60, seed=1)
    assert (both.ci_high - both.ci_low).sum() > (g.ci_high - g.ci_low).sum()
    none = estimate("pacc", inp, n_boot=0)
    assert np.all(np.isnan(none.ci_low))


def test_bootstrap_interval_covers_the_truth_most_of_the_time():
    prob = GaussianProblem(k=3, dim=5, separation=1.2, n_ref_per_domain=150, seed=11)
    rng = np.random.default_rng(0)
    hits, total = 0, 0
    for _ in range(20):
        alpha = rng.dirichlet(np.full(3, 2.0))
        inp = prob.inputs(prob.sample(alpha, 400))
        r = estimate("pacc", inp, n_boot=100, seed=int(rng.integers(1 << 30)))
        inside = (r.ci_low - 1e-9 <= alpha) & (alpha <= r.ci_high + 1e-9)
        hits += int(inside.sum())
        total += inside.size
    assert hits / total >= 0.8, hits / total
