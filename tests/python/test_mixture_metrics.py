"""Evaluation metrics against hand-computed values (and QuaPy's error functions for the smoothed ones)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ingest.mixture import ae, evaluate, kld, mae, overlap_accuracy, r2, rae

A = np.array([0.5, 0.3, 0.2, 0.0])
P = np.array([0.4, 0.4, 0.1, 0.1])


def test_hand_computed():
    # |a - p| = [.1, .1, .1, .1]
    assert overlap_accuracy(A, P) == pytest.approx(1 - 0.5 * 0.4)  # 0.8
    assert ae(A, P) == pytest.approx(0.1)
    assert mae(A, P) == pytest.approx(0.1)
    # mean(a) = .25; ss_tot = .0625 + .0025 + .0025 + .0625 = .13; ss_res = 4 * .01 = .04
    assert r2(A, P) == pytest.approx(1 - 0.04 / 0.13)
    # N = 10 -> eps = .05; s(x) = (x + .05) / 1.2
    sa = (A + 0.05) / 1.2
    sp = (P + 0.05) / 1.2
    assert sa[3] == pytest.approx(0.05 / 1.2)
    assert rae(A, P, n=10) == pytest.approx(np.mean(np.abs(sa - sp) / sa))
    # RAE by hand: |diff| of smoothed = .1/1.2 each; divided by sa = [.55,.35,.25,.05]/1.2
    assert rae(A, P, n=10) == pytest.approx(np.mean([0.1 / 0.55, 0.1 / 0.35, 0.1 / 0.25, 0.1 / 0.05]))
    kl = sum(x * math.log(x / y) for x, y in zip(sa, sp))
    assert kld(A, P, n=10) == pytest.approx(kl)
    assert kld(A, A, n=10) == pytest.approx(0.0)
    assert overlap_accuracy(A, A) == 1.0
    m = evaluate(A, P, n=10)
    assert set(m) == {"overlap_accuracy", "ae", "mae", "r2", "rae", "kl"}


def test_paper_example_olmo():
    # OLMo-1B documented (Web = CC + C4) vs the paper's recovered mixture (Table 7): overlap 94.46%
    truth = np.array([81.10, 13.40, 0.10, 0.20, 2.30, 2.90]) / 100
    est = np.array([83.99, 12.89, 2.04, 0.91, 0.09, 0.08]) / 100
    assert overlap_accuracy(truth, est) == pytest.approx(0.9446, abs=2e-4)


def test_many_pairs_and_quapy_agreement():
    qp_error = pytest.importorskip("quapy.error")
    a = np.array([A, [0.25, 0.25, 0.25, 0.25]])
    p = np.array([P, [0.1, 0.2, 0.3, 0.4]])
    assert mae(a, p) == pytest.approx(qp_error.mae(a, p))
    assert np.allclose(ae(a, p), qp_error.ae(a, p))
    assert np.allclose(rae(a, p, eps=0.01), qp_error.rae(a, p, eps=0.01))
    assert np.allclose(kld(a, p, eps=0.01), qp_error.kld(a, p, eps=0.01))
    assert np.isnan(r2(a, p)[1])  # uniform truth: R^2 undefined
    with pytest.raises(ValueError):
        rae(A, P)  # neither eps nor n
