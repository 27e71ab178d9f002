"""The mixture estimators against QuaPy (the oracle), on the same posteriors.

QuaPy's aggregative methods are fitted on precomputed posteriors through `aggregation_fit(predictions,
labels)` with a pass-through "classifier" (its `predict_proba` returns its input), and one test runs
QuaPy end to end with a real scikit-learn classifier (`fit_classifier=False, val_split=(X_ref, y_ref)`).

Where the definitions match exactly we require agreement to 1e-6 (we get ~1e-15):
CC, PCC (direct), EMQ with BCTS, and ACC/PACC whenever the constrained optimum is interior (then QuaPy's
`solver='exact-raise'` computes the same exact solution). QuaPy's default ACC/PACC solver is SLSQP at its
default tolerance on a problem whose optimum is often on the simplex boundary; it lands 1e-7..1e-5 away
from the exact minimiser, so there we check that ours is within 1e-4 AND has a residual no larger than
QuaPy's (ours is the exact minimiser; see `ingest/mixture/simplex.py`).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

qp = pytest.importorskip("quapy")
from quapy.method.aggregative import ACC, CC, EMQ, PACC, PCC, BBSEhard, KDEyML  # noqa: E402
from sklearn.base import BaseEstimator, ClassifierMixin  # noqa: E402

from ingest.mixture import get_estimator  # noqa: E402
from ingest.mixture.synthetic import GaussianProblem  # noqa: E402


class PassThrough(BaseEstimator, ClassifierMixin):
    """A 'fitted classifier' whose inputs are already posteriors."""

    def __init__(self, k: int = 4):
        self.k = k
        self.classes_ = np.arange(k)

    def fit(self, X, y):
        return self

    def predict_proba(self, P):
        return P

    def predict(self, P):
        return np.argmax(P, axis=1)


@pytest.fixture(scope="module")
def problem():
    return GaussianProblem(k=4, dim=6, separation=1.3, n_ref_per_domain=300, seed=3, n_calib_per_domain=150)


def quapy_fit(method_cls, problem, crisp: bool, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = method_cls(PassThrough(problem.k), fit_classifier=False, **kw)
    p = problem.ref_posteriors
    m.aggregation_fit(np.argmax(p, axis=1) if crisp else p, problem.ref_labels)
    return m


def quapy_aggregate(m, gen, crisp: bool):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return m.aggregate(np.argmax(gen, axis=1) if crisp else gen)


INTERIOR = [np.array([0.4, 0.3, 0.2, 0.1]), np.array([0.25, 0.25, 0.25, 0.25]), np.array([0.1, 0.2, 0.3, 0.4])]
BOUNDARY = [np.array([0.6, 0.4, 0.0, 0.0]), np.array([0.0, 0.05, 0.0, 0.95])]


def test_cc_and_pcc_match_quapy_exactly(problem):
    for alpha in INTERIOR + BOUNDARY:
        gen = problem.sample(alpha, 800)
        inp = problem.inputs(gen)
        q_cc = quapy_aggregate(quapy_fit(CC, problem, True), gen, True)
        q_pcc = quapy_aggregate(quapy_fit(PCC, problem, False), gen, False)
        assert np.max(np.abs(get_estimator("cc").estimate(inp) - q_cc)) < 1e-12
        assert np.max(np.abs(get_estimator("direct").estimate(inp) - q_pcc)) < 1e-12


@pytest.mark.parametrize("name,cls,crisp", [("acc", ACC, True), ("pacc", PACC, False)])
def test_acc_pacc_match_quapy_exact_solver_when_interior(problem, name, cls, crisp):
    checked = 0
    for alpha in INTERIOR:
        gen = problem.sample(alpha, 3000)
        est = get_estimator(name)
        ours = est.estimate(problem.inputs(gen))
        q_exact = quapy_aggregate(quapy_fit(cls, problem, crisp, val_split=None, solver="exact-raise"), gen, crisp)
        if np.all(q_exact > 0):  # the unconstrained solution is inside the simplex: both problems coincide
            assert np.max(np.abs(ours - q_exact)) < 1e-6
            checked += 1
        q_min = quapy_aggregate(quapy_fit(cls, problem, crisp, val_split=None), gen, crisp)
        assert np.max(np.abs(ours - q_min)) < 1e-4
    assert checked >= 2


@pytest.mark.parametrize("name,cls,crisp", [("acc", ACC, True), ("pacc", PACC, False)])
def test_acc_pacc_at_least_as_good_as_quapy_slsqp_on_boundary(problem, name, cls, crisp):
    for alpha in BOUNDARY:
        gen = problem.sample(alpha, 2000)
        est = get_estimator(name)
        ours = est.estimate(problem.inputs(gen))
        q = quapy_fit(cls, problem, crisp, val_split=None)
        theirs = quapy_aggregate(q, gen, crisp)
        assert np.max(np.abs(ours - theirs)) < 1e-4
        # same matrix and observed vector as QuaPy's (QuaPy stores M = C^T)
        assert np.allclose(q.Pte_cond_estim_, est.C_.T, atol=1e-14)
        obs = est._observed(gen)
        assert np.linalg.norm(est.C_.T @ ours - obs) <= np.linalg.norm(q.Pte_cond_estim_ @ theirs - obs) + 1e-12


def test_pacc_matches_quapy_end_to_end_with_a_real_classifier(problem):
    """QuaPy scores the documents itself (prefit LogisticRegression, validation tuple)."""
    x_ref, y_ref = problem.draw(np.full(problem.k, 200))
    x_gen, _ = problem.draw(np.array([900, 600, 300, 200]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        q = PACC(problem.model, fit_classifier=False, val_split=(x_ref, y_ref), solver="exact-raise")
        q.fit(x_ref, y_ref)
        theirs = q.predict(x_gen)
    from ingest.mixture import MixtureInputs

    inp = MixtureInputs(domains=problem.domains, ref_posteriors=problem.model.predict_proba(x_ref),
                        ref_labels=y_ref, gen_posteriors=problem.model.predict_proba(x_gen))
    ours = get_estimator("pacc").estimate(inp)
    assert np.all(theirs > 0)
    assert np.max(np.abs(ours - theirs)) < 1e-6


@pytest.mark.parametrize("use_calib", [False, True])
def test_emq_bcts_matches_quapy(problem, use_calib):
    for alpha in INTERIOR + BOUNDARY:
        gen = problem.sample(alpha, 1000)
        inp = problem.inputs(gen)
        if not use_calib:
            inp = inp.replace(calib_posteriors=None, calib_labels=None)
            p, y = problem.ref_posteriors, problem.ref_labels
        else:
            p, y = problem.calib_posteriors, problem.calib_labels
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            q = EMQ(PassThrough(problem.k), fit_classifier=False, val_split=None, exact_train_prev=False,
                    calib="bcts")
            q.aggregation_fit(p, y)
            theirs = q.aggregate(gen)
        est = get_estimator("emq")
        ours = est.estimate(inp)
        assert np.max(np.abs(ours - theirs)) < 1e-6
        assert est.diagnostics_["solver_status"] == "converged"


def test_emq_without_calibration_matches_quapy(problem):
    gen = problem.sample(INTERIOR[0], 1000)
    inp = problem.inputs(gen).replace(calib_posteriors=None, calib_labels=None)
    q = quapy_fit(EMQ, problem, False, val_split=None, exact_train_prev=True)
    q.train_prevalence = np.bincount(problem.ref_labels, minlength=problem.k) / problem.ref_labels.size
    theirs = quapy_aggregate(q, gen, False)
    ours = get_estimator("emq", calib=None, exact_train_prev=True).estimate(inp)
    assert np.max(np.abs(ours - theirs)) < 1e-6


def test_bbse_and_kdey_close_to_quapy(problem):
    """Same definitions, different optimisers (ours: exact NNLS / SLSQP at ftol 1e-12; QuaPy: default SLSQP)."""
    gen = problem.sample(INTERIOR[0], 1000)
    inp = problem.inputs(gen)
    theirs = quapy_aggregate(quapy_fit(BBSEhard, problem, True, val_split=None), gen, True)
    assert np.max(np.abs(get_estimator("bbse").estimate(inp) - theirs)) < 1e-3
    theirs = quapy_aggregate(quapy_fit(KDEyML, problem, False, val_split=None), gen, False)
    assert np.max(np.abs(get_estimator("kdey").estimate(inp) - theirs)) < 1e-3
