"""Bootstrap, PM and paired-difference math (ingest/metrics/bootstrap.py) against scipy.stats.bootstrap,
an independent numpy implementation with the same seed, and hand-computed cases."""

from __future__ import annotations

import hashlib

import numpy as np
import pyarrow as pa
import pytest
from scipy import stats

from ingest.metrics import bootstrap as bs
from ingest.marts import propme as M


def ratio_stat(num, den, axis=-1):
    return np.sum(num, axis=axis) / np.sum(den, axis=axis)


def numpy_oracle(num: np.ndarray, den: np.ndarray, seed: int, names: tuple[str, ...], B: int) -> np.ndarray:
    """Independent reimplementation of the documented protocol: gather, no count matrices."""
    key = int.from_bytes(hashlib.blake2b("\x1f".join(names).encode(), digest_size=8).digest(), "little")
    idx = np.random.default_rng([seed, key]).integers(0, len(num), size=(B, len(num)))
    n, d = num[idx].sum(axis=1), den[idx].sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(d > 0, n / d, np.nan)


def sample(seed: int, n: int, k: int = 3) -> tuple[np.ndarray, np.ndarray]:
    g = np.random.default_rng(seed)
    den = g.integers(0, 11, size=(n, k)).astype(float)  # prompts with 0..10 eligible samples
    num = np.floor(den * g.random((n, k)))
    num[:, -1] = den[:, -1] * g.random(n) * 0.7  # a continuous numerator (nv-recall sums)
    return num, den


@pytest.mark.parametrize("n, B", [(7, 500), (40, 2000), (300, 1000)])
def test_replicates_and_interval_equal_scipy_percentile_bootstrap(n: int, B: int) -> None:
    num, den = sample(n, n)
    den[den == 0] = 1  # scipy has no notion of a skipped resample
    reps = bs.ratio_replicates(num, den, B, bs.stream_rng(42, "setting", "run", "trace"))
    for j in range(num.shape[1]):
        res = stats.bootstrap((num[:, j], den[:, j]), ratio_stat, paired=True, vectorized=True, n_resamples=B,
                              method="percentile", confidence_level=0.95,
                              rng=bs.stream_rng(42, "setting", "run", "trace"))
        np.testing.assert_allclose(reps[:, j], res.bootstrap_distribution, rtol=0, atol=1e-12)
        iv = bs.percentile_interval(reps[:, j], 0.95)
        assert iv.n_skipped == 0
        assert iv.low == pytest.approx(res.confidence_interval.low, abs=1e-12)
        assert iv.high == pytest.approx(res.confidence_interval.high, abs=1e-12)


def test_replicates_equal_the_independent_numpy_oracle_with_skips() -> None:
    num, den = sample(5, 12)
    den[:9, 0] = 0  # most units have no pair: many resamples have a zero denominator
    num[:9, 0] = 0
    B = 3000
    reps = bs.ratio_replicates(num, den, B, bs.stream_rng(7, "setting", "r", ""))
    oracle = np.stack([numpy_oracle(num[:, j], den[:, j], 7, ("setting", "r", ""), B) for j in range(3)], axis=1)
    np.testing.assert_allclose(reps, oracle, rtol=0, atol=1e-12, equal_nan=True)
    iv = bs.percentile_interval(reps[:, 0])
    kept = oracle[:, 0][~np.isnan(oracle[:, 0])]
    assert iv.n_skipped == int(np.isnan(oracle[:, 0]).sum()) > 0
    assert iv.low == pytest.approx(np.percentile(kept, 2.5), abs=1e-12)
    assert iv.high == pytest.approx(np.percentile(kept, 97.5), abs=1e-12)


def test_chunking_does_not_change_the_draws() -> None:
    num, den = sample(3, 50)
    a = bs.resampled_sums(np.hstack([num, den]), 333, bs.stream_rng(1, "x"))
    one_draw = np.random.default_rng([1, bs.stream_key("x")]).integers(0, 50, size=(333, 50))
    b = np.hstack([num, den])[one_draw].sum(axis=1)
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-9)
    for chunk in (1, 7, 64, 1000):
        got = [c for _, c in bs.resample_counts(50, 333, bs.stream_rng(1, "x"), chunk=chunk)]
        np.testing.assert_array_equal(np.vstack(got), np.stack([np.bincount(r, minlength=50) for r in one_draw]))


def test_duplicate_columns_are_summed_once_but_returned_for_each() -> None:
    num, den = sample(9, 30, k=4)
    den[:, 1:] = den[:, :1]  # four metrics with one shared denominator
    reps = bs.ratio_replicates(num, den, 200, bs.stream_rng(3, "s"))
    for j in range(4):
        np.testing.assert_allclose(reps[:, j], numpy_oracle(num[:, j], den[:, j], 3, ("s",), 200), atol=1e-12)


def test_streams_differ_by_name_and_seed() -> None:
    draws = {(seed, names): tuple(bs.stream_rng(seed, *names).integers(0, 10**6, 20).tolist())
             for seed in (1, 2) for names in [("setting", "a", "t"), ("setting", "b", "t"), ("setting", "a", "")]}
    assert len(set(draws.values())) == len(draws)
    assert draws[(1, ("setting", "a", "t"))] == tuple(bs.stream_rng(1, "setting", "a", "t").integers(0, 10**6, 20))


def test_point_values_and_hand_computed_interval() -> None:
    # two units: (1 hit of 2) and (0 of 2); with resamples {u0,u0}, {u0,u1}, {u1,u0}, {u1,u1}
    num = np.array([[1.0], [0.0]])
    den = np.array([[2.0], [2.0]])
    assert bs.point_ratio(num, den)[0] == 0.25
    reps = bs.ratio_replicates(num, den, 4000, bs.stream_rng(0, "h"))[:, 0]
    assert set(np.round(reps, 12)) == {0.0, 0.25, 0.5}
    iv = bs.percentile_interval(reps)
    assert (iv.low, iv.high) == (0.0, 0.5)


def test_propensity_metric_hand_cases() -> None:
    assert bs.propensity(0.2, 0.6) == pytest.approx(0.25)
    assert bs.propensity(0.0, 0.0) == 0.0 and bs.propensity(0.0, 0.3) == 0.0
    assert bs.propensity(0.3, 0.0) == 1.0
    assert np.isnan(bs.propensity(float("nan"), 0.3))
    reps = bs.propensity_replicates(np.array([0.1, 0.0, 0.0, np.nan, 0.2]), np.array([0.3, 0.0, 0.5, 0.1, 0.2]))
    np.testing.assert_allclose(reps, [0.25, np.nan, 0.0, np.nan, 0.5], equal_nan=True)
    iv = bs.percentile_interval(reps)
    assert iv.n_skipped == 2
    kept = [0.25, 0.0, 0.5]
    assert (iv.low, iv.high) == pytest.approx((np.percentile(kept, 2.5), np.percentile(kept, 97.5)))


def test_propensity_interval_equals_scipy_on_independent_resamples() -> None:
    """Each run's replicates are scipy's bootstrap distribution (own stream); PM pairs them round by round."""
    num_p, den_p = sample(11, 60, k=1)
    num_c, den_c = sample(12, 45, k=1)
    den_p[den_p == 0] = 1
    den_c[den_c == 0] = 1
    B = 2000
    rep_p = bs.ratio_replicates(num_p, den_p, B, bs.stream_rng(42, "setting", "p", "t"))[:, 0]
    rep_c = bs.ratio_replicates(num_c, den_c, B, bs.stream_rng(42, "setting", "c", "t"))[:, 0]
    sp = stats.bootstrap((num_p[:, 0], den_p[:, 0]), ratio_stat, paired=True, vectorized=True, n_resamples=B,
                         method="percentile", rng=bs.stream_rng(42, "setting", "p", "t")).bootstrap_distribution
    sc = stats.bootstrap((num_c[:, 0], den_c[:, 0]), ratio_stat, paired=True, vectorized=True, n_resamples=B,
                         method="percentile", rng=bs.stream_rng(42, "setting", "c", "t")).bootstrap_distribution
    iv = bs.percentile_interval(bs.propensity_replicates(rep_p, rep_c))
    want = np.percentile(sp / (sp + sc), [2.5, 97.5])
    assert (iv.low, iv.high) == pytest.approx(tuple(want), abs=1e-12)


def test_paired_difference_equals_scipy_paired_bootstrap() -> None:
    num_a, den_a = sample(21, 80, k=2)
    num_b, den_b = sample(22, 80, k=2)
    for d in (den_a, den_b):
        d[d == 0] = 1
    B = 1500
    reps = bs.paired_difference_replicates(num_a, den_a, num_b, den_b, B, bs.stream_rng(5, "difference", "a", "b", "t"))
    for j in range(2):
        res = stats.bootstrap(
            (num_a[:, j], den_a[:, j], num_b[:, j], den_b[:, j]),
            lambda na, da, nb, db, axis=-1: ratio_stat(na, da, axis) - ratio_stat(nb, db, axis),
            paired=True, vectorized=True, n_resamples=B, method="percentile",
            rng=bs.stream_rng(5, "difference", "a", "b", "t"))
        np.testing.assert_allclose(reps[:, j], res.bootstrap_distribution, atol=1e-12)
        iv = bs.percentile_interval(reps[:, j])
        want = (res.confidence_interval.low, res.confidence_interval.high)
        assert (iv.low, iv.high) == pytest.approx(want, abs=1e-12)


def test_rule_of_three() -> None:
    assert bs.rule_of_three_upper(1000) == 0.003
    assert np.isnan(bs.rule_of_three_upper(0))


def _units_table(rows):
    return pa.table({k: [r[k] for r in rows] for k in
                     ("run_id", "trace_id", "unit_id", "metric", "num", "den", "n_generations", "n_eligible")})


def test_setting_bootstrap_model_function_on_a_small_table() -> None:
    rows = []
    g = np.random.default_rng(0)
    for u in range(25):
        for m in ("fmr", "nvr"):
            d = float(g.integers(1, 4))
            rows.append({"run_id": "r1", "trace_id": "t1", "unit_id": f"p{u:03d}", "metric": m,
                         "num": float(g.integers(0, int(d) + 1)), "den": d, "n_generations": 3, "n_eligible": int(d)})
    rows.append({"run_id": "r2", "trace_id": None, "unit_id": "g1", "metric": "fmr", "num": 0.0, "den": 1.0,
                 "n_generations": 1, "n_eligible": 1})
    params = M.Params(300, 9, 0.9, ("fmr",))
    out = M.setting_bootstrap(_units_table(rows[::-1]), params).to_pylist()  # input order does not matter
    by = {(r["run_id"], r["metric"]): r for r in out}
    t = _units_table(rows)
    for metric in ("fmr", "nvr"):
        sel = [r for r in rows if r["run_id"] == "r1" and r["metric"] == metric]
        sel.sort(key=lambda r: r["unit_id"])
        num = np.array([r["num"] for r in sel])
        den = np.array([r["den"] for r in sel])
        reps = numpy_oracle(num, den, 9, ("setting", "r1", "t1"), 300)
        r = by[("r1", metric)]
        assert r["value"] == pytest.approx(num.sum() / den.sum(), abs=1e-12)
        assert r["ci_low"] == pytest.approx(np.percentile(reps, 5), abs=1e-12)
        assert r["ci_high"] == pytest.approx(np.percentile(reps, 95), abs=1e-12)
        assert r["n_units"] == 25 and r["n_generations"] == 75 and r["n_excluded"] == 75 - int(den.sum())
        np.testing.assert_allclose(r["replicates"], reps, atol=1e-12)  # every metric keeps its replicates
    assert by[("r2", "fmr")]["trace_id"] is None and by[("r2", "fmr")]["value"] == 0.0
    assert t.num_rows == len(rows)


def test_model_functions_accept_zero_rows() -> None:
    params = M.Params(100, 1, 0.95, ("fmr",))
    empty_units = _units_table([])
    assert M.setting_bootstrap(empty_units, params).num_rows == 0
    assert M.setting_bootstrap(empty_units, None).schema == M.SETTING_SCHEMA
    pairs = pa.table({"propensity_run_id": pa.array([], pa.string()), "capability_run_id": pa.array([], pa.string()),
                      "trace_id": pa.array([], pa.string())})
    assert M.propensity_bootstrap(pairs, M.SETTING_SCHEMA.empty_table(), params).schema == M.PROPENSITY_SCHEMA
    run_pairs = pa.table({"run_a": pa.array([], pa.string()), "run_b": pa.array([], pa.string()),
                          "trace_id": pa.array([], pa.string())})
    assert M.difference_bootstrap(run_pairs, empty_units, params).schema == M.DIFFERENCE_SCHEMA
    assert M.Params.from_table(pa.table({"bootstrap_resamples": pa.array([], pa.int32())})) is None
    assert M.sql_in_list([]) == "null" and M.sql_in_list(["a'b"]) == "'a''b'"


def test_duplicate_unit_rows_are_refused() -> None:
    row = {"run_id": "r", "trace_id": "t", "unit_id": "u", "metric": "fmr", "num": 1.0, "den": 1.0,
           "n_generations": 1, "n_eligible": 1}
    with pytest.raises(ValueError, match="two rows"):
        M.unit_matrices(_units_table([row, dict(row)]))
