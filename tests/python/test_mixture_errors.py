"""Bad inputs give one-line UserErrors (or a documented fallback), never silent nonsense."""

from __future__ import annotations

import numpy as np
import pytest

from ingest.errors import UserError
from ingest.mixture import MixtureInputs, estimate, get_estimator

REF = np.array([[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.1, 0.1, 0.8], [0.7, 0.2, 0.1]])
GEN = np.array([[0.6, 0.3, 0.1], [0.2, 0.2, 0.6]])


def make(**over):
    fields = dict(domains=["web", "code", "books"], ref_posteriors=REF, ref_labels=[0, 1, 2, 0], gen_posteriors=GEN)
    fields.update(over)
    return MixtureInputs(**fields)


def one_line(exc_info) -> str:
    msg = str(exc_info.value)
    assert "\n" not in msg
    return msg


def test_domain_without_reference_documents():
    with pytest.raises(UserError) as e:
        make(ref_labels=[0, 1, 1, 0])
    assert "books" in one_line(e) and "no reference documents" in one_line(e)


@pytest.mark.parametrize("bad,words", [
    (np.nan, "NaN"), (np.inf, "NaN or infinite"), (-0.1, "negative"),
])
def test_bad_posterior_values(bad, words):
    ref = REF.copy()
    ref[2, 0] = bad
    with pytest.raises(UserError) as e:
        make(ref_posteriors=ref)
    assert words in one_line(e) and "row 2" in one_line(e)
    gen = GEN.copy()
    gen[1, 1] = bad
    with pytest.raises(UserError) as e:
        make(gen_posteriors=gen)
    assert "generation posteriors" in one_line(e)


def test_non_normalised_posteriors_and_tolerance():
    with pytest.raises(UserError) as e:
        make(gen_posteriors=GEN * 2)
    assert "sums to 2" in one_line(e)
    ok = make(gen_posteriors=GEN * (1 + 1e-6))  # float32-level drift is renormalised
    assert np.allclose(ok.gen_posteriors.sum(axis=1), 1, atol=1e-15)


def test_k_mismatch():
    with pytest.raises(UserError) as e:
        make(gen_posteriors=np.array([[0.5, 0.5]]))
    assert "K mismatch" in one_line(e)
    with pytest.raises(UserError):
        make(domains=["web", "code"])


def test_zero_generations():
    inp = make(gen_posteriors=np.zeros((0, 3)))
    for name in ("pacc", "emq", "direct"):
        with pytest.raises(UserError) as e:
            estimate(name, inp, n_boot=0)
        assert "no generations" in one_line(e)
        with pytest.raises(UserError):
            get_estimator(name).estimate(inp)


def test_labels_and_shapes():
    with pytest.raises(UserError) as e:
        make(ref_labels=[0, 1, 5, 0])
    assert "0..2" in one_line(e)
    with pytest.raises(UserError) as e:
        make(ref_labels=["web", "code", "poetry", "web"])
    assert "poetry" in one_line(e)
    assert make(ref_labels=["web", "code", "books", "web"]).ref_labels.tolist() == [0, 1, 2, 0]
    with pytest.raises(UserError):
        make(ref_labels=[0, 1, 2])
    with pytest.raises(UserError):
        make(ref_folds=[0, 1])
    with pytest.raises(UserError):
        make(domains=["web", "web", "books"])
    with pytest.raises(UserError):
        make(calib_posteriors=REF)  # labels missing


def test_unknown_estimator_and_parameters():
    with pytest.raises(UserError) as e:
        get_estimator("magic")
    assert "pacc" in one_line(e)
    with pytest.raises(UserError) as e:
        get_estimator("pacc", bandwidth=0.1)
    assert "bandwidth" in one_line(e)
    with pytest.raises(UserError):
        estimate("pacc", make(), n_boot=-1)
    with pytest.raises(UserError):
        estimate("pacc", make(), resample=["everything"])
    with pytest.raises(UserError):
        get_estimator("llmsurgeon_code", split_fold=9).estimate(make(ref_folds=[0, 0, 0, 0]))


def test_exact_zero_posteriors_are_handled_by_calibration():
    ref = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [0.9, 0.1, 0.0]] * 5)
    inp = make(ref_posteriors=ref, ref_labels=[0, 1, 2, 0] * 5, gen_posteriors=np.array([[1.0, 0.0, 0.0]]))
    for name in ("emq", "llmsurgeon_code"):
        pi = get_estimator(name).estimate(inp)
        assert np.all(np.isfinite(pi)) and np.isclose(pi.sum(), 1)
