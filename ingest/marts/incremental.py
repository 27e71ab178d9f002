"""Per-run incremental Python models: compute only the (run, tracing pass) groups whose inputs changed.

A per-run bootstrap (int_setting_bootstrap, int_cumulative_filter_bootstrap) resamples each run from its own
seeded stream over its own units, so a run's rows depend on that run's units and the bootstrap vars only.
An SQL model beside it (`<model>_inputs`) holds one `input_hash` per (run_id, trace_id). On an incremental
build the model first deletes its rows whose (run_id, trace_id, input_hash) is not current (a changed or
vanished run), then computes the groups whose current hash has no row left and returns them (dbt appends
them), each row carrying its group's hash. A first build or `--full-refresh` computes every group.

Memory: the units are read a few groups at a time, never the whole table (`batches`): as many runs as the models'
worker threads, but no more input rows than the build's budget gives one batch of a Python model
(`python_batch_bytes` / UNIT_ROW_BYTES; a run larger than that is a batch of its own). So a build's Python memory
is bounded by its largest run, not by the lake (issue 32; the rest of the build is bounded by DuckDB's
memory_limit, ingest/build_memory.py). Each run's rows depend on that run alone, so the result is the same as one
pass over every run, whatever the batches.

The delete runs on the session dbt-duckdb hands the model, which is dbt's own connection: it is part of the
build's transaction, so a failed build keeps the old rows. (A pre-hook cannot do it: with DuckDB 2 its
unfetched result blocks the model's first query on that connection.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ingest.build_memory import python_batch_bytes
from ingest.marts.common import arrow_of, workers

_SEP = "\x1f"
RUN = ("run_id", "trace_id")  # the group of a per-run model; a per-pair model passes ("run_a", "run_b", "trace_id")
# Memory per input row of a per-run bootstrap: the Arrow rows of the projected units (run, pass, unit, metric,
# four numbers) read in UNIT_ORDER and the codes and matrices `unit_matrices` makes from them. Measured on a
# 16x-paper-scale run (160,000 units x 30 metrics = 4.8M rows, 10,000 resamples), DuckDB held to 400 MB: 1,048
# MiB peak, 141 MiB at the start, so 198 bytes a row, DuckDB's sort included (2026-12-04; unsorted rows through
# the general path: 1,517 MiB).
UNIT_ROW_BYTES = 200


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


def batches(groups: pa.Table, keys: tuple[str, ...] = RUN, size: int | None = None,
            rows: list[int] | None = None, max_rows: int | None = None) -> list[pa.Table]:
    """`groups` cut into tables in sorted key order, each of at most `size` groups (default: the models' worker
    threads) and, when `rows` (each group's input rows, in `groups`' order) is given, of at most `max_rows`
    input rows, but never empty: a group larger than `max_rows` is a batch of its own."""
    size = size or workers()
    if groups.num_rows == 0:
        return []
    order = sorted(range(groups.num_rows), key=_group_keys(groups, keys).__getitem__)
    ordered = groups.take(pa.array(order, pa.int64()))
    if rows is None or max_rows is None:
        return [ordered.slice(i, size) for i in range(0, ordered.num_rows, size)]
    out, start, held = [], 0, 0
    for i, g in enumerate(order):
        n = rows[g]
        if i > start and (i - start >= size or held + n > max_rows):
            out.append(ordered.slice(start, i - start))
            start, held = i, 0
        held += n
    out.append(ordered.slice(start, len(order) - start))
    return out


def group_rows(units: Any, groups: pa.Table) -> list[int]:
    """How many rows of `units` each of `groups` (per-run keys) has, in `groups`' order (one count query)."""
    if groups.num_rows == 0:
        return []
    counted = arrow_of(units.filter(sql_group_filter(groups)).aggregate("run_id, trace_id, count(*) as n_rows"))
    have = dict(zip(_group_keys(counted), counted.column("n_rows").to_pylist()))
    return [int(have.get(k, 0)) for k in _group_keys(groups)]


def with_input_hash(result: pa.Table, groups: pa.Table, keys: tuple[str, ...] = RUN) -> pa.Table:
    """`result` (rows keyed by `keys`) with its group's input_hash appended as the last column."""
    lookup = dict(zip(_group_keys(groups, keys), groups.column("input_hash").to_pylist()))
    hashes = [lookup[k] for k in _group_keys(result, keys)] if result.num_rows else []
    return result.append_column(pa.field("input_hash", pa.string()), pa.array(hashes, pa.string()))


def incremental_by_run(dbt: Any, session: Any, units: Any, inputs: Any,
                       compute: Callable[[pa.Table], pa.Table], order: str | None = None) -> pa.Table:
    """The whole pattern: the groups to compute (`inputs`: the `<model>_inputs` relation), their rows of
    `units` (a relation with run_id and trace_id: project it to the columns `compute` reads, every column
    costs memory per row) read a batch of groups at a time, `compute(those rows)` per batch, the hash column.
    `order` (an ORDER BY list) sorts each batch's rows in DuckDB, e.g. the bootstraps' `UNIT_ORDER`, whose
    sorted rows `unit_matrices` reads without sorting or copying them again. (The models pass relations, not
    names: dbt finds a Python model's dependencies in its own `dbt.ref("...")` calls.)"""
    groups = groups_to_compute(dbt, session, inputs)
    cut = batches(groups, rows=group_rows(units, groups), max_rows=max(1, python_batch_bytes() // UNIT_ROW_BYTES))
    def rows(batch: pa.Table) -> pa.Table:
        picked = units.filter(sql_group_filter(batch))
        return arrow_of(picked.order(order) if order else picked)

    parts = [compute(rows(batch)) for batch in cut]
    if not parts:  # nothing to compute: the empty table with the model's schema
        parts = [compute(arrow_of(units.filter("false")))]
    return with_input_hash(pa.concat_tables(parts), groups)
