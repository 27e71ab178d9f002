"""The mixture marts with real dbt on a hand-built lake whose posteriors are constructed so that the answers
are known exactly.

Three domains; every reference document of domain i carries posterior A_i or B_i, in equal numbers outside
the calibration fold, so the soft confusion matrix is exactly C[i] = (A_i + B_i) / 2 and the hard one is
known (B_1's argmax is domain 0). The run's 16 generations are drawn per domain in the proportions
alpha = (0.25, 0.5, 0.25), again half A and half B, so the observed mean is exactly C^T alpha and the argmax
shares exactly C_hard^T alpha: pacc and acc recover alpha exactly (to solver precision), direct gives
C^T alpha and cc gives C_hard^T alpha. The documented mixture of the run's model (the lake's, as the
sandbox writes it) is alpha, so pacc's overlap accuracy is 1. Each estimate and interval must also equal the
library's `ingest.mixture.estimate` on the same arrays; a second classifier with a domain that has no
reference documents gives NULL rows with a reason, not a failed build.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pytest

from ingest.build import build
from ingest.marts.mixture import CONFUSION_SCHEMA, ESTIMATES_SCHEMA, confusion_table, estimates_table
from ingest.home import db_path
from ingest.lake import Lake, make_key, text_hash
from ingest.mixture import MixtureInputs, estimate, metrics

pytestmark = pytest.mark.slow

DOMAINS = ["code", "docs", "web"]
A = np.array([[0.9, 0.05, 0.05], [0.1, 0.8, 0.1], [0.1, 0.2, 0.7]])
B = np.array([[0.7, 0.15, 0.15], [0.5, 0.4, 0.1], [0.1, 0.2, 0.7]])
C_SOFT = (A + B) / 2
C_HARD = np.array([[1.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.0, 0.0, 1.0]])
ALPHA = np.array([0.25, 0.5, 0.25])
N_PER_DOMAIN = (4, 8, 4)
N_BOOT = 20
SEED = 7
ESTIMATORS = ["direct", "cc", "acc", "pacc", "llmsurgeon_code", "emq", "bbse", "rlls"]
SELECT = ["path:models/staging", "path:models/intermediate/mixture", "path:models/marts/mixture",
          "mixtures_documented"]


def ref_docs() -> list[dict]:
    """8 documents per domain, folds 0..3 (two each), alternating A and B; fold 0 is the calibration fold."""
    out = []
    for i, d in enumerate(DOMAINS):
        for j in range(8):
            out.append({"ref_doc_id": make_key("refs", f"{d}-{j}"), "domain": d, "text": f"{d} {j}", "split": "train",
                        "fold": j // 2, "source": "refs", "doc_id": f"{d}-{j}", "probs": (A if j % 2 == 0 else B)[i]})
    return out


def generations() -> list[dict]:
    out = []
    for i, (d, n) in enumerate(zip(DOMAINS, N_PER_DOMAIN)):
        for j in range(n):
            out.append({"generation_id": make_key("r1", d, j), "run_id": "r1", "prompt_id": None,
                        "sample_idx": len(out), "text": f"a {d} sample", "probs": (A if j % 2 == 0 else B)[i]})
    return out


def classifier_row(name: str, domains: list[str]) -> dict:
    return {"classifier_id": make_key(name), "name": name, "backend": "hand", "domains": domains,
            "temperature": 1.0, "params": json.dumps({"calibration_fold": 0}), "fitted_on": "by hand"}


def write_lake(home: Path) -> None:
    lake = Lake(home)
    refs, gens = ref_docs(), generations()
    lake.write("reference_docs", "refs", [{k: v for k, v in r.items() if k != "probs"} for r in refs])
    lake.write("runs", "r1", [{"run_id": "r1", "model": "org/hand-model", "setting": "unconditional"},
                              {"run_id": "r0", "model": "unscored", "setting": "unconditional"}])
    lake.write("generations", "r1", [{k: v for k, v in g.items() if k != "probs"} for g in gens])
    lake.write("mixtures_documented", "hand", [
        {"mixture_id": make_key("hand-model", d), "model": "hand-model", "domain": d, "weight": float(w),
         "source": "mixture.json"} for d, w in zip(DOMAINS, ALPHA)])
    good, bad = classifier_row("hand", DOMAINS), classifier_row("broken", DOMAINS + ["extra"])
    lake.write("classifiers", "hand", [good, bad])
    rows = []
    for c in (good, bad):
        k = len(c["domains"])
        pad = lambda p: [*map(float, p), *([0.0] * (k - 3))]  # noqa: E731
        rows += [{"output_id": make_key(c["classifier_id"], r["ref_doc_id"]), "classifier_id": c["classifier_id"],
                  "item_id": r["ref_doc_id"], "item_kind": "reference", "fold": r["fold"], "probs": pad(r["probs"])}
                 for r in refs]
        rows += [{"output_id": make_key(c["classifier_id"], g["generation_id"]), "classifier_id": c["classifier_id"],
                  "item_id": g["generation_id"], "item_kind": "generation", "fold": None, "probs": pad(g["probs"]),
                  "text_hash": text_hash(g["text"])} for g in gens]
    lake.write("classifier_outputs", "hand", rows)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    home = tmp_path_factory.mktemp("mixture") / "warehouse"
    Lake(home).init()
    write_lake(home)
    # only the mixture models and staging; "cautious": skip tests that reach models outside the selection
    os.environ["DBT_INDIRECT_SELECTION"] = "cautious"
    try:
            result = build(home, select=SELECT, progress=False, full_tests=True,
                       vars_=json.dumps({"mixture_bootstrap_resamples": N_BOOT, "mixture_bootstrap_seed": SEED,
                                         "mixture_estimators": ESTIMATORS}))
    finally:
        os.environ.pop("DBT_INDIRECT_SELECTION", None)
    assert result.success, result.failures
    return home


def query(home: Path, sql: str) -> list[dict]:
    with duckdb.connect(str(db_path(home)), read_only=True) as con:
        cur = con.execute(sql)
        cols = [c[0] for c in cur.description]
        return [dict(zip(cols, r)) for r in cur.fetchall()]


def vector(rows: list[dict], column: str) -> np.ndarray:
    by = {r["domain"]: r[column] for r in rows}
    return np.array([by[d] for d in DOMAINS], dtype=float)


def test_confusion_matrices_are_the_constructed_ones(built: Path) -> None:
    rows = query(built, f"select * from fct_confusion where classifier_id = '{make_key('hand')}'")
    assert len(rows) == 18
    for kind, expected in (("soft", C_SOFT), ("hard", C_HARD)):
        got = np.zeros((3, 3))
        for r in rows:
            if r["kind"] == kind:
                got[r["true_index"], r["predicted_index"]] = r["value"]
                assert r["support"] == 6 and r["n_reference"] == 18 and r["n_calibration"] == 6
        np.testing.assert_allclose(got, expected, atol=1e-12)
        conds = {r["condition_number"] for r in rows if r["kind"] == kind}
        assert len(conds) == 1 and conds.pop() == pytest.approx(np.linalg.cond(expected))


def test_estimates_recover_the_known_mixture(built: Path) -> None:
    rows = query(built, f"select * from fct_mixture_estimates where classifier_id = '{make_key('hand')}'")
    assert {r["estimator"] for r in rows} == set(ESTIMATORS) and len(rows) == 3 * len(ESTIMATORS)
    assert all(r["run_id"] == "r1" and r["n_generations"] == 16 and r["null_reason"] is None for r in rows)
    assert all(r["n_boot"] == N_BOOT and r["seed"] == SEED and r["ci_level"] == 0.95 for r in rows)
    by = {e: [r for r in rows if r["estimator"] == e] for e in ESTIMATORS}
    np.testing.assert_allclose(vector(by["pacc"], "estimate"), ALPHA, atol=1e-9)
    np.testing.assert_allclose(vector(by["acc"], "estimate"), ALPHA, atol=1e-9)
    np.testing.assert_allclose(vector(by["bbse"], "estimate"), ALPHA, atol=1e-9)
    np.testing.assert_allclose(vector(by["direct"], "estimate"), C_SOFT.T @ ALPHA, atol=1e-12)
    np.testing.assert_allclose(vector(by["cc"], "estimate"), C_HARD.T @ ALPHA, atol=1e-12)
    for e in ESTIMATORS:
        est = vector(by[e], "estimate")
        assert est.sum() == pytest.approx(1.0) and np.all(est >= -1e-12)
        lo, hi = vector(by[e], "ci_low"), vector(by[e], "ci_high")
        assert np.all(lo <= hi)
    diag = json.loads(by["pacc"][0]["diagnostics"])
    assert diag["estimator"] == "pacc" and diag["n_boot"] == N_BOOT and diag["support"] == {d: 6 for d in DOMAINS}
    assert by["pacc"][0]["condition_number"] == pytest.approx(np.linalg.cond(C_SOFT))
    assert json.loads(by["pacc"][0]["params"])["bootstrap_resamples"] == N_BOOT


def test_estimates_and_intervals_equal_the_library_on_the_same_arrays(built: Path) -> None:
    refs = sorted(ref_docs(), key=lambda r: r["ref_doc_id"])
    gens = sorted(generations(), key=lambda g: g["generation_id"])
    cal = np.array([r["fold"] == 0 for r in refs])
    p = np.array([r["probs"] for r in refs])
    y = np.array([DOMAINS.index(r["domain"]) for r in refs])
    folds = np.array([r["fold"] for r in refs])
    inputs = MixtureInputs(domains=DOMAINS, ref_posteriors=p[~cal], ref_labels=y[~cal], ref_folds=folds[~cal],
                           gen_posteriors=np.array([g["probs"] for g in gens]), calib_posteriors=p[cal],
                           calib_labels=y[cal])
    rows = query(built, f"select * from fct_mixture_estimates where classifier_id = '{make_key('hand')}'")
    for name in ("pacc", "emq", "llmsurgeon_code"):
        lib = estimate(name, inputs, n_boot=N_BOOT, seed=SEED)
        mine = [r for r in rows if r["estimator"] == name]
        np.testing.assert_allclose(vector(mine, "estimate"), lib.estimate, atol=1e-12)
        np.testing.assert_allclose(vector(mine, "ci_low"), lib.ci_low, atol=1e-12)
        np.testing.assert_allclose(vector(mine, "ci_high"), lib.ci_high, atol=1e-12)


def test_evaluation_against_the_documented_mixture(built: Path) -> None:
    rows = query(built, f"select * from fct_mixture_evaluation where classifier_id = '{make_key('hand')}'")
    assert {r["estimator"] for r in rows} == set(ESTIMATORS)
    by = {r["estimator"]: r for r in rows}
    for name in ("pacc", "acc"):
        assert by[name]["documented_model"] == "hand-model" and by[name]["run_model"] == "org/hand-model"
        assert by[name]["overlap_accuracy"] == pytest.approx(1.0, abs=1e-9)
        assert by[name]["mae"] == pytest.approx(0.0, abs=1e-9) and by[name]["r2"] == pytest.approx(1.0, abs=1e-9)
    est = {r["estimator"]: r for r in query(built, "select estimator, list(estimate order by domain) as e "
                                                   f"from fct_mixture_estimates where classifier_id = "
                                                   f"'{make_key('hand')}' group by estimator")}
    for name, r in by.items():
        want = metrics.evaluate(ALPHA, np.array(est[name]["e"]), n=16)
        for m in ("overlap_accuracy", "mae", "r2", "rae", "kl"):
            assert r[m] == pytest.approx(want[m], abs=1e-9), (name, m)
        assert r["uncovered_weight"] == pytest.approx(0.0) and r["null_reason"] is None
    assert by["direct"]["overlap_accuracy"] == pytest.approx(1 - 0.5 * np.abs(C_SOFT.T @ ALPHA - ALPHA).sum())


def test_a_classifier_with_a_domain_without_reference_documents_gives_null_rows_with_a_reason(built: Path) -> None:
    conf = query(built, f"select * from fct_confusion where classifier_id = '{make_key('broken')}'")
    assert len(conf) == 32 and all(r["value"] is None for r in conf)
    assert "['extra'] have no reference documents" in conf[0]["null_reason"]
    est = query(built, f"select * from fct_mixture_estimates where classifier_id = '{make_key('broken')}'")
    assert len(est) == 4 * len(ESTIMATORS) and all(r["estimate"] is None for r in est)
    assert all("no reference documents" in r["null_reason"] for r in est)
    ev = query(built, f"select * from fct_mixture_evaluation where classifier_id = '{make_key('broken')}'")
    assert ev and all(r["overlap_accuracy"] is None and r["null_reason"] for r in ev)


def test_the_documented_recipes_are_seeded(built: Path) -> None:
    rows = query(built, "select * from int_mixtures_documented where model = 'OLMo-1B' order by domain")
    web = next(r for r in rows if r["domain"] == "Web")
    assert web["weight"] == pytest.approx(0.811) and web["documented_domains"] == ["C4", "CommonCrawl"]
    assert len(rows) == 6 and sum(r["share"] for r in rows) == pytest.approx(1.0)
    llama = query(built, "select sum(weight) as w, count(*) as n from int_mixtures_documented where model = 'LLaMA-1'")
    assert llama == [{"w": pytest.approx(1.0), "n": 6}]


def test_zero_input_rows_give_zero_output_rows() -> None:
    """What `dbt build --empty` and an empty lake feed the Python models."""
    empty = pa.table({"classifier_id": pa.array([], pa.string()), "name": pa.array([], pa.string()),
                      "domains": pa.array([], pa.list_(pa.string()))})
    ref = pa.table({c: pa.array([], t) for c, t in [("classifier_id", pa.string()), ("ref_doc_id", pa.string()),
                                                    ("true_index", pa.int32()), ("fold", pa.int32()),
                                                    ("is_calibration", pa.bool_()),
                                                    ("probs", pa.list_(pa.float64()))]})
    gen = pa.table({c: pa.array([], t) for c, t in [("classifier_id", pa.string()), ("run_id", pa.string()),
                                                    ("generation_id", pa.string()),
                                                    ("probs", pa.list_(pa.float64()))]})
    params = pa.table({"estimators": pa.array([], pa.list_(pa.string()))})
    assert confusion_table(empty, ref).schema == CONFUSION_SCHEMA and confusion_table(empty, ref).num_rows == 0
    assert estimates_table(empty, ref, gen, params).schema == ESTIMATES_SCHEMA
    assert estimates_table(empty, ref, gen, params).num_rows == 0


def test_reference_posteriors_that_no_longer_match_the_training_set_are_flagged() -> None:
    """classifiers.params.n_reference (written by classify train) against the posteriors that still join."""
    classifiers = pa.table({"classifier_id": ["c"], "name": ["tf"], "domains": [["a", "b"]],
                            "params": [json.dumps({"n_reference": 5, "calibration_fold": 0})]})
    ref = pa.table({"classifier_id": ["c", "c"], "ref_doc_id": ["x", "y"], "true_index": [0, 1], "fold": [1, 1],
                    "is_calibration": [False, False], "probs": [[0.9, 0.1], [0.2, 0.8]]})
    t = confusion_table(classifiers, ref).to_pylist()
    assert len(t) == 8 and all(r["value"] is None for r in t)
    assert "2 of its 5 reference posteriors match the current reference documents" in t[0]["null_reason"]
