"""Incremental mixture models (by (classifier, run), macros/mixture_incremental.sql): an incremental build after
changes to the lake gives the same generation posteriors, per-run estimates and fct_mixture_estimates as a
`--full-refresh` build of the same lake (the oracle: everything recomputed from nothing).

On test_mixture_dbt's hand-built lake (two classifiers, run r1) plus runs r2 and r4 scored by the good
classifier: build; add a scored run (r3), re-import a generation of r1 (its posterior no longer counts), remove r2;
build incrementally and compare with a full refresh row for row. r4's rows are reused (a hand-made change to them
survives the incremental build). Then a changed reference posterior of the classifier (the calibration side),
with the classifier renamed in place, must recompute every run it scored, and a changed var every group.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import duckdb
import pytest
from test_mixture_dbt import DOMAINS, A, B, write_lake

from ingest.build import build
from ingest.home import db_path
from ingest.lake import Lake, make_key, text_hash

pytestmark = pytest.mark.slow

SELECT = ["+fct_mixture_estimates"]
NO_TESTS = ["test_type:data", "test_type:unit"]
VARS = {"mixture_bootstrap_resamples": 10, "mixture_bootstrap_seed": 7, "mixture_estimators": ["cc", "pacc", "emq"]}
TABLES = ["int_mixture_generation_posteriors", "int_mixture_run_estimates", "fct_mixture_estimates"]
HAND = make_key("hand")


def _build(home: Path, full_refresh: bool = False, **vars_) -> None:
    res = build(home, select=SELECT, exclude=NO_TESTS, full_refresh=full_refresh, progress=False,
                vars_=json.dumps({**VARS, **vars_}))
    assert res.success, res.failures


def _tables(home: Path) -> dict[str, list[tuple]]:
    def norm(v):
        if isinstance(v, list):
            return tuple(norm(x) for x in v)
        return float(f"{v:.12g}") if isinstance(v, float) and math.isfinite(v) else v

    with duckdb.connect(str(db_path(home)), read_only=True) as con:
        return {name: sorted((tuple(norm(v) for v in r) for r in con.execute(f'select * from "{name}"').fetchall()),
                             key=repr) for name in TABLES}


def _hashes(home: Path) -> dict[tuple[str, str], str]:
    with duckdb.connect(str(db_path(home)), read_only=True) as con:
        return {(c, r): h for c, r, h in con.execute(
            "select distinct classifier_id, run_id, input_hash from int_mixture_run_estimates").fetchall()}


def _run(lake: Lake, run_id: str, mix: tuple[int, int, int]) -> None:
    """A run scored by the good classifier: mix[i] generations of domain i, half A and half B posteriors."""
    gens, outputs = [], []
    for i, (d, n) in enumerate(zip(DOMAINS, mix)):
        for j in range(n):
            g = {"generation_id": make_key(run_id, d, j), "run_id": run_id, "prompt_id": None,
                 "sample_idx": len(gens), "text": f"{run_id} {d} {j}"}
            gens.append(g)
            outputs.append({"output_id": make_key(HAND, g["generation_id"]), "classifier_id": HAND,
                            "item_id": g["generation_id"], "item_kind": "generation", "fold": None,
                            "probs": [float(x) for x in (A if j % 2 == 0 else B)[i]],
                            "text_hash": text_hash(g["text"])})
    lake.write("runs", run_id, [{"run_id": run_id, "model": f"org/{run_id}", "setting": "unconditional"}])
    lake.write("generations", run_id, gens)
    lake.write("classifier_outputs", run_id, outputs)


def _rewrite(lake: Lake, table: str, partition: str, change) -> None:
    rows = lake.read(table, partition).to_pylist()
    lake.write(table, partition, [change(dict(r)) for r in rows])


def test_incremental_mixture_equals_a_full_refresh(tmp_path: Path) -> None:
    home = tmp_path / "warehouse"
    Lake(home).init()
    write_lake(home)
    lake = Lake(home)
    _run(lake, "r2", (2, 6, 4))
    _run(lake, "r4", (6, 2, 2))
    _build(home)
    before = _hashes(home)
    assert {r for _, r in before} == {"r1", "r2", "r4"}

    # add r3, re-import a generation of r1 (its posterior no longer counts), remove r2 (its runs row)
    _run(lake, "r3", (4, 4, 4))
    changed = make_key("r1", "code", 0)
    _rewrite(lake, "generations", "r1", lambda g: {**g, "text": "re-imported"} if g["generation_id"] == changed else g)
    lake.delete("runs", "r2")
    with duckdb.connect(str(db_path(home))) as con:  # a hand-made change to r4 (unchanged) must survive
        kept = con.execute("select estimator, domain, diagnostics from int_mixture_run_estimates "
                           "where run_id = 'r4'").fetchall()
        con.execute("update int_mixture_run_estimates set diagnostics = 'tampered' where run_id = 'r4'")
    _build(home)
    after = _hashes(home)
    with duckdb.connect(str(db_path(home))) as con:
        assert con.execute("select bool_and(diagnostics = 'tampered') from int_mixture_run_estimates "
                           "where run_id = 'r4'").fetchone()[0]
        con.executemany("update int_mixture_run_estimates set diagnostics = ? "
                        "where run_id = 'r4' and estimator = ? and domain = ?", [(d, e, m) for e, m, d in kept])
    incremental = _tables(home)
    assert {r for _, r in after} == {"r1", "r3", "r4"}
    assert after[(HAND, "r4")] == before[(HAND, "r4")] and after[(HAND, "r1")] != before[(HAND, "r1")]
    assert 15 in {r[9] for r in incremental["int_mixture_run_estimates"] if r[0] == "r1"}  # n_generations
    _build(home, full_refresh=True)
    refreshed = _tables(home)
    for name in TABLES[:2]:  # fct_mixture_estimates was built from the tampered rows; compared below
        assert refreshed[name] == incremental[name], name

    # a changed reference posterior of the good classifier, which is also renamed in place (same classifier_id),
    # recomputes every run it scored (and no other), posteriors and estimates under the new name
    ref_doc = make_key("refs", "docs-1")
    _rewrite(lake, "classifier_outputs", "hand",
             lambda o: {**o, "probs": [0.3, 0.6, 0.1]} if o["item_id"] == ref_doc and o["classifier_id"] == HAND
             else o)
    _rewrite(lake, "classifiers", "hand", lambda c: {**c, "name": "hand-v2"} if c["classifier_id"] == HAND else c)
    _build(home)
    recomputed = _hashes(home)
    assert all(recomputed[k] != after[k] for k in after if k[0] == HAND)
    assert all(recomputed[k] == after[k] for k in after if k[0] != HAND)
    incremental = _tables(home)
    assert {r[1] for r in incremental["int_mixture_generation_posteriors"] if r[0] == HAND} == {"hand-v2"}
    assert {r[2] for r in incremental["fct_mixture_estimates"] if r[1] == HAND} == {"hand-v2"}
    _build(home, full_refresh=True)
    assert _tables(home) == incremental

    # a changed var recomputes every group
    _build(home, mixture_bootstrap_seed=8)
    reseeded = _hashes(home)
    assert reseeded.keys() == recomputed.keys() and all(reseeded[k] != recomputed[k] for k in reseeded)
    with duckdb.connect(str(db_path(home)), read_only=True) as con:
        assert con.execute("select bool_and(seed = 8) from fct_mixture_estimates where run_id is not null"
                           ).fetchone()[0]
