"""Models computed one lake partition at a time, so a build's DuckDB memory is bounded by the largest partition.

`int_generation_span_facts` aggregates every span and every retrieved document of the lake. As one query at 16x
paper scale (80M spans, 324M document rows) its hash tables did not reliably fit DuckDB's 3.4 GB share of a 6 GB
build budget: the same query passed or ran out of memory from one build to the next (BENCHMARKS.md "The
generation facts one lake partition at a time"). Its SQL lives in a view (`int_partition_span_facts`, with dbt's
unit tests) keyed by `lake_partition`; this runs that view for one range of partition names at a time, a filter
DuckDB pushes down to both Parquet scans (each then opens that range's files only), as many partitions per range
as DuckDB's memory share holds, and appends the rows to a temporary table that dbt materializes.

The view joins a span's documents within its partition. `lmaudit trace` writes a batch's spans and documents under
one partition name, so that loses nothing; a lake written otherwise (documents under another name) would lose
documents silently, so `check_copartitioned` stops the build with one line instead (at no extra scan).

Every statement's result is fetched before the next: with DuckDB 2 an unfetched result on dbt's connection blocks
the next query on it (docs/footguns.md).

Incremental like the per-run models (`ingest.marts.incremental.groups_to_compute`, keyed by partition instead of
run): a later build deletes the rows of vanished or changed partitions (`<model>_inputs` holds one input_hash per
partition) and computes only the partitions without rows.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ingest.build_memory import build_memory
from ingest.marts.incremental import groups_to_compute

PARTITION = "lake_partition"
ROWS = "n_spans"  # the inputs model's count of a partition's spans
# DuckDB memory per span of a range: at 16x paper scale one partition of 2.0M spans and 8.1M documents peaked at
# 926 MiB (~485 bytes a span; 2026-12-04), doubled for dbt's second thread beside it
ROW_BYTES = 1000


class NotCopartitioned(RuntimeError):
    """The lake holds documents outside their span's partition (the build's error line says which)."""


def check_copartitioned(session: Any, spans: Any, documents: Any) -> Any:
    """Every document row lies in the partition of its span. Before the first partition: every span_documents
    partition name is a spans partition's. Returned, for after each range of partitions: their facts count as many
    documents as the partitions hold (`sum(n_docs)` against a row count DuckDB reads from the Parquet footers), so a
    document whose span lies elsewhere is caught at no extra scan."""
    q_spans, q_docs = spans.sql_query(), documents.sql_query()
    stray = session.execute(f"""
        select distinct {PARTITION} from ({q_docs})
        where {PARTITION} not in (select distinct {PARTITION} from ({q_spans}))
        order by 1 limit 1""").fetchall()
    for (name,) in stray:
        raise NotCopartitioned(_message(name, "has no spans partition of that name"))

    def after(lo: str, hi: str, table: str, todo: str) -> None:
        in_batch = f"{PARTITION} >= $lo and {PARTITION} <= $hi and {PARTITION} in (select {PARTITION} from {todo})"
        [(held,)] = session.execute(f"select count(*) from ({q_docs}) where {in_batch}",
                                    {"lo": lo, "hi": hi}).fetchall()
        [(joined,)] = session.execute(f'select coalesce(sum(n_docs), 0) from "{table}" where {in_batch}',
                                      {"lo": lo, "hi": hi}).fetchall()
        if held != joined:
            [(first,)] = session.execute(
                f"select min(d.{PARTITION}) from ({q_docs}) as d where {in_batch.replace(PARTITION, 'd.' + PARTITION)} "
                f"and not exists (select 1 from ({q_spans}) as s where s.{PARTITION} = d.{PARTITION} "
                f"and s.span_id = d.span_id)", {"lo": lo, "hi": hi}).fetchall()
            raise NotCopartitioned(_message(first or lo, f"holds document rows whose span is not in its spans "
                                                         f"partition ({held - joined} in partitions {lo!r}..{hi!r})"))
    return after


def _message(name: str, what: str) -> str:
    return (f"span_documents partition {name!r} {what}: the generation facts join a span's documents within its "
            "lake partition, as `lmaudit trace` writes them (a batch's spans, span_documents, span_counts and "
            "traced_generations under one name); write the documents under their spans' partition name")


def partition_ranges(names: list[str], rows: list[int], max_rows: int,
                     others: list[str] = ()) -> list[tuple[str, str]]:
    """The partitions to compute, sorted by name and cut into ranges (first, last name) of at most `max_rows`
    spans each (a larger partition is a range of its own). A range never spans one of `others` (partitions
    whose rows are kept): the view aggregates every partition of its range before the join keeps the ones to
    compute, so an incremental build reads only what it computes."""
    out: list[tuple[str, str]] = []
    lo = hi = None
    held = 0
    todo = dict(zip(names, rows))
    for name in sorted(set(names) | set(others)):
        n = todo.get(name)
        if lo is not None and (n is None or held + n > max_rows):
            out.append((lo, hi))
            lo, held = None, 0
        if n is None:
            continue
        lo = name if lo is None else lo
        hi, held = name, held + n
    if lo is not None:
        out.append((lo, hi))
    return out


def by_partition(dbt: Any, session: Any, view: Any, inputs: Any, name: str,
                 check: Callable[[], Callable[[str, str, str, str], None] | None] | None = None) -> Any:
    """Rows of `view` (a relation with a `lake_partition` column) for the partitions `inputs` (their names,
    input_hash and span count `n_spans`) says need computing, each with its partition's input_hash, as a relation
    over temporary table `name`. The partitions are computed a range of names at a time, as many as DuckDB's
    share of the build's memory holds (`ROW_BYTES` a span): a range filter reaches both Parquet scans through
    the view (an IN list does not), so each query opens the range's files only, and a lake of thousands of small
    partitions (`lmaudit trace` writes one per 64 generations) takes a few queries, not thousands. `check()` runs
    first and may return a check to run after each range (`check_copartitioned`)."""
    groups = groups_to_compute(dbt, session, inputs, keys=(PARTITION,))
    # also with nothing to compute: documents added under another name must stop an incremental build too
    after = check() if check is not None else None
    query, todo = view.sql_query(), f'"{name}_todo"'
    session.register(f"{name}_groups", groups)
    session.execute(f'create or replace temp table {todo} as select {PARTITION}, input_hash, {ROWS} '
                    f'from "{name}_groups"').fetchall()
    session.unregister(f"{name}_groups")
    session.execute(f'create or replace temp table "{name}" as '
                    f"select *, cast(null as varchar) as input_hash from ({query}) where false").fetchall()
    every = [r[0] for r in session.execute(f"select {PARTITION} from ({inputs.sql_query()})").fetchall()]
    for lo, hi in partition_ranges(groups.column(PARTITION).to_pylist(), groups.column(ROWS).to_pylist(),
                                   max(1, build_memory().duckdb_limit // ROW_BYTES), others=every):
        session.execute(f'insert into "{name}" select view.*, todo.input_hash from ({query}) as view '
                        f"inner join {todo} as todo on view.{PARTITION} = todo.{PARTITION} "
                        f"where view.{PARTITION} >= $lo and view.{PARTITION} <= $hi", {"lo": lo, "hi": hi}).fetchall()
        if after is not None:
            after(lo, hi, name, todo)
    return session.table(f'"{name}"')
