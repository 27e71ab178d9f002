"""`unit_matrices` reads rows sorted in UNIT_ORDER (as the per-run bootstraps now fetch them) by a lean path
without sorting or copying the keys; any other order by the general path. Oracle: the general path on the
same rows shuffled (and DuckDB's own ORDER BY for the sorted input), matrix for matrix, and whole bootstrap
tables equal whichever path ran."""

from __future__ import annotations

import random

import duckdb
import numpy as np
import pyarrow as pa
import pytest

from ingest.marts import propme as M


def _rows(seed: int) -> list[dict]:
    rnd = random.Random(seed)
    rows = []
    for run in ("run-b", "run-a", "ré-ü"):  # a non-ASCII id: byte order = code-point order
        for trace in ("t2", None, "t1"):
            units = rnd.sample([f"u{i:03d}" for i in range(40)] + ["U9", "é1", "z"], rnd.randint(1, 12))
            for unit in units:
                for metric in rnd.sample(["fmr", "lmr", "nvr", "pm_fmr", "te@1"], rnd.randint(1, 5)):
                    rows.append({"run_id": run, "trace_id": trace, "unit_id": unit, "metric": metric,
                                 "num": float(rnd.randint(0, 3)), "den": float(rnd.randint(1, 3)),
                                 "n_generations": rnd.randint(1, 4), "n_eligible": rnd.randint(0, 4)})
    return rows


def _table(rows: list[dict]) -> pa.Table:
    schema = pa.schema([("run_id", pa.string()), ("trace_id", pa.string()), ("unit_id", pa.string()),
                        ("metric", pa.string()), ("num", pa.float64()), ("den", pa.float64()),
                        ("n_generations", pa.int64()), ("n_eligible", pa.int64())])
    return pa.Table.from_pylist(rows, schema=schema)


def _duckdb_sorted(rows: list[dict]) -> pa.Table:
    con = duckdb.connect()
    con.register("units", _table(rows))
    out = con.sql("select * from units").order(M.UNIT_ORDER).arrow()
    con.close()
    return out.read_all() if isinstance(out, pa.RecordBatchReader) else out


def _same(a: dict, b: dict) -> None:
    assert list(a) == list(b)
    for key in a:
        x, y = a[key], b[key]
        assert list(x.units) == list(y.units) and x.metrics == y.metrics, key
        for name in ("num", "den", "n_generations", "n_eligible"):
            np.testing.assert_array_equal(getattr(x, name), getattr(y, name))


@pytest.mark.parametrize("seed", range(6))
def test_sorted_rows_give_the_general_paths_matrices(seed: int, monkeypatch) -> None:
    rows = _rows(seed)
    shuffled = rows[:]
    random.Random(seed + 100).shuffle(shuffled)
    sorted_table = _duckdb_sorted(rows)
    calls = []
    lean = M._unit_matrices_sorted  # noqa: SLF001 - counting which path ran
    monkeypatch.setattr(M, "_unit_matrices_sorted", lambda *a: calls.append(1) or lean(*a))
    general = M.unit_matrices(_table(shuffled))
    assert not calls  # shuffled rows: the general path
    fast = M.unit_matrices(sorted_table)
    assert calls == [1]  # DuckDB's order is the lean path's order
    _same(fast, general)
    params = M.Params(200, 7, 0.9, ("pm_fmr",))
    # repr: NaN replicates (a resample with no denominator) compare equal to themselves
    assert repr(M.setting_bootstrap(sorted_table, params).to_pylist()) == repr(
        M.setting_bootstrap(_table(shuffled), params).to_pylist())


def test_a_duplicate_row_in_sorted_input_is_still_refused() -> None:
    rows = _rows(1)
    rows.append(dict(rows[0]))
    with pytest.raises(ValueError, match="two rows"):
        M.unit_matrices(_duckdb_sorted(rows))


def test_chunked_input_takes_the_lean_path_too() -> None:
    t = _duckdb_sorted(_rows(2))
    chunked = pa.Table.from_batches(t.to_batches(max_chunksize=7))
    assert chunked.column("unit_id").num_chunks > 1
    _same(M.unit_matrices(chunked), M.unit_matrices(t))
