"""Per-run Python models read their units a batch of runs at a time (ingest/marts/incremental.py): the batches
cover every group once, and each batch's filter selects exactly its groups' rows (NULL trace ids and quotes
included). Oracle: the rows picked by comparing keys in Python."""

from __future__ import annotations

import duckdb
import pyarrow as pa

from ingest.marts.incremental import batches, group_rows, sql_group_filter

ROWS = [("r1", "t1", 1), ("r1", "t2", 2), ("r2", None, 3), ("r'3", "t1", 4), ("r2", "t1", 5), ("r4", "t1", 6),
        ("r1", "t1", 7)]


def _units() -> pa.Table:
    return pa.table({"run_id": [r[0] for r in ROWS], "trace_id": [r[1] for r in ROWS], "v": [r[2] for r in ROWS]})


def _groups(keys: list[tuple]) -> pa.Table:
    return pa.table({"run_id": [k[0] for k in keys], "trace_id": pa.array([k[1] for k in keys], pa.string()),
                     "input_hash": [f"h{i}" for i in range(len(keys))]})


def test_batches_cover_every_group_once_in_key_order() -> None:
    keys = [("r2", None), ("r1", "t2"), ("r'3", "t1"), ("r1", "t1"), ("r4", "t1")]
    parts = batches(_groups(keys), size=2)
    assert [p.num_rows for p in parts] == [2, 2, 1]
    got = [(r["run_id"], r["trace_id"]) for p in parts for r in p.to_pylist()]
    assert sorted(got, key=repr) == sorted(keys, key=repr) and len(got) == len(keys)
    assert got == sorted(keys, key=lambda k: (k[0], k[1] or "\x00"))
    assert batches(_groups([]), size=2) == []


def test_a_batch_filter_selects_exactly_its_groups_rows() -> None:
    units = _units()
    con = duckdb.connect()
    con.register("units", units)
    for chosen in ([("r1", "t1"), ("r2", None)], [("r'3", "t1")], [("r2", "t1"), ("r1", "t2"), ("r4", "t1")], []):
        where = sql_group_filter(_groups(chosen))
        got = sorted(v for (v,) in con.execute(f"select v from units where {where}").fetchall())
        expected = sorted(v for run, trace, v in ROWS if (run, trace) in chosen)
        assert got == expected, (chosen, where)
    con.close()


def _cut(keys: list[tuple], rows: list[int], size: int, max_rows: int) -> list[list[tuple]]:
    parts = batches(_groups(keys), size=size, rows=rows, max_rows=max_rows)
    return [[(r["run_id"], r["trace_id"]) for r in p.to_pylist()] for p in parts]


def test_batches_hold_no_more_input_rows_than_the_budget_but_a_large_run_goes_alone() -> None:
    # hand-cut: key order r1/t1 (5 rows), r1/t2 (2), r2/None (9: over the budget, alone), r4/t1 (3), r5/t1 (1)
    keys = [("r4", "t1"), ("r2", None), ("r1", "t2"), ("r5", "t1"), ("r1", "t1")]
    rows = [3, 9, 2, 1, 5]
    assert _cut(keys, rows, size=2, max_rows=8) == [[("r1", "t1"), ("r1", "t2")], [("r2", None)],
                                                    [("r4", "t1"), ("r5", "t1")]]
    assert _cut(keys, rows, size=2, max_rows=6) == [[("r1", "t1")], [("r1", "t2")], [("r2", None)],
                                                    [("r4", "t1"), ("r5", "t1")]]
    assert _cut(keys, rows, size=3, max_rows=100) == [[("r1", "t1"), ("r1", "t2"), ("r2", None)],
                                                      [("r4", "t1"), ("r5", "t1")]]
    assert _cut(keys, rows, size=5, max_rows=1) == [[k] for k in sorted(keys, key=lambda k: (k[0], k[1] or ""))]


def test_group_rows_counts_each_groups_units() -> None:
    con = duckdb.connect()
    con.register("units", _units())
    chosen = [("r1", "t1"), ("r2", None), ("r9", "t1")]
    assert group_rows(con.table("units"), _groups(chosen)) == [2, 1, 0]
    assert group_rows(con.table("units"), _groups([])) == []
    con.close()


def test_the_batch_budget_comes_from_the_build() -> None:
    from ingest.build_memory import (DUCKDB_SHARE, ENV_MEMORY, ENV_PYTHON_BATCH, PYTHON_BATCH_SHARE,
                                     python_batch_bytes)

    assert python_batch_bytes({ENV_PYTHON_BATCH: "123456"}) == 123456
    expected = int((6 * 10**9 - int(6 * 10**9 * DUCKDB_SHARE)) * PYTHON_BATCH_SHARE)
    assert python_batch_bytes({ENV_MEMORY: "6GB"}) == expected  # a plain `dbt build`: the same figure
