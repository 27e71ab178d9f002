"""Per-run incremental Python models: compute only the (run, tracing pass) groups whose inputs changed.

A per-run bootstrap (int_setting_bootstrap, int_cumulative_filter_bootstrap) resamples each run from its own
seeded stream over its own units, so a run's rows depend on that run's units and the bootstrap vars only.
An SQL model beside it (`<model>_inputs`) holds one `input_hash` per (run_id, trace_id). On an incremental
build the model first deletes its rows whose (run_id, trace_id, input_hash) is not current (a changed or
vanished run), then computes the groups whose current hash has no row left and returns them (dbt appends
them), each row carrying its group's hash. A first build or `--full-refresh` computes every group.

Memory: the units are read a few groups at a time (`batches`: as many runs as the models' worker threads), never
the whole table, so a build's Python memory is bounded by its largest runs, not by the lake (issue 32; the rest of
the build is bounded by DuckDB's memory_limit, ingest/build_memory.py). Each run's rows depend on that run alone,
so the result is the same as one pass over every run.

The delete runs on the session dbt-duckdb hands the model, which is dbt's own connection: it is part of the
build's transaction, so a failed build keeps the old rows. (A pre-hook cannot do it: with DuckDB 2 its
unfetched result blocks the model's first query on that connection.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ingest.marts.common import arrow_of, workers

_SEP = "\x1f"
RUN = ("run_id", "trace_id")  # the group of a per-run model; a per-pair model passes ("run_a", "run_b", "trace_id")


def _group_keys(t: pa.Table, keys: tuple[str, ...] = RUN) -> list[str]:
    cols = [pc.fill_null(t.column(k).cast(pa.string()), "\x00") for k in keys]
    return pc.binary_join_element_wise(*cols, _SEP).to_pylist()


def groups_to_compute(dbt: Any, session: Any, inputs: Any, keys: tuple[str, ...] = RUN) -> pa.Table:
    """Delete the stale rows (incremental builds only), then return the rows of `inputs` (a relation of
    `keys` and input_hash) whose hash has no row in the model's table: all of them on a first build or a
    `--full-refresh`."""
    current = arrow_of(inputs)
    if not dbt.is_incremental:
        return current
    same = " and ".join(f"cur.{k} is not distinct from old.{k}" for k in keys)
    session.execute(f"""
        delete from {dbt.this} as old
        where not exists (
            select 1 from ({inputs.sql_query()}) as cur
            where {same} and cur.input_hash = old.input_hash)""").fetchall()
    stored = arrow_of(session.sql(f"select distinct {', '.join(keys)} from {dbt.this}"))
    have = set(_group_keys(stored, keys))
    return current.filter(pa.array([k not in have for k in _group_keys(current, keys)], pa.bool_()))


def _literals(values: list[str]) -> str:
    return ", ".join("'" + v.replace("'", "''") + "'" for v in values)


def sql_group_filter(groups: pa.Table, keys: tuple[str, ...] = RUN) -> str:
    """A WHERE condition that selects the rows of these groups (false when there is none). The first key is
    also tested on its own (`run_id in (...)`), which DuckDB can push into the scan."""
    values = sorted(set(_group_keys(groups, keys)))
    if not values:
        return "false"
    expr = " || chr(31) || ".join(f"coalesce(cast({k} as varchar), chr(0))" for k in keys)
    first = sorted({v for v in groups.column(keys[0]).to_pylist() if v is not None})
    nulls = groups.column(keys[0]).null_count > 0
    head = f"({keys[0]} in ({_literals(first) or 'null'}){f' or {keys[0]} is null' if nulls else ''}) and "
    return f"{head}{expr} in ({_literals(values)})"


def batches(groups: pa.Table, keys: tuple[str, ...] = RUN, size: int | None = None) -> list[pa.Table]:
    """`groups` cut into tables of `size` rows (default: the models' worker threads), in sorted key order."""
    size = size or workers()
    if groups.num_rows == 0:
        return []
    order = sorted(range(groups.num_rows), key=_group_keys(groups, keys).__getitem__)
    ordered = groups.take(pa.array(order, pa.int64()))
    return [ordered.slice(i, size) for i in range(0, ordered.num_rows, size)]


def with_input_hash(result: pa.Table, groups: pa.Table, keys: tuple[str, ...] = RUN) -> pa.Table:
    """`result` (rows keyed by `keys`) with its group's input_hash appended as the last column."""
    lookup = dict(zip(_group_keys(groups, keys), groups.column("input_hash").to_pylist()))
    hashes = [lookup[k] for k in _group_keys(result, keys)] if result.num_rows else []
    return result.append_column(pa.field("input_hash", pa.string()), pa.array(hashes, pa.string()))


def incremental_by_run(dbt: Any, session: Any, units: Any, inputs: Any,
                       compute: Callable[[pa.Table], pa.Table]) -> pa.Table:
    """The whole pattern: the groups to compute (`inputs`: the `<model>_inputs` relation), their rows of
    `units` (a relation with run_id and trace_id) read a batch of groups at a time, `compute(those rows)` per
    batch, the hash column. (The models pass relations, not names: dbt finds a Python model's dependencies in
    its own `dbt.ref("...")` calls.)"""
    groups = groups_to_compute(dbt, session, inputs)
    parts = [compute(arrow_of(units.filter(sql_group_filter(batch)))) for batch in batches(groups)]
    if not parts:  # nothing to compute: the empty table with the model's schema
        parts = [compute(arrow_of(units.filter("false")))]
    return with_input_hash(pa.concat_tables(parts), groups)
