"""Models computed one lake partition at a time, so a build's DuckDB memory is bounded by the largest partition.

`int_generation_span_facts` aggregates every span and every retrieved document of the lake. As one query at 16x
paper scale (80M spans, 324M document rows) its hash tables did not reliably fit DuckDB's 3.4 GB share of a 6 GB
build budget: the same query passed or ran out of memory from one build to the next (BENCHMARKS.md "The
generation facts one lake partition at a time"). Its SQL lives in a view (`int_partition_span_facts`, with dbt's
unit tests) keyed by `lake_partition`; this runs that view once per partition, a filter DuckDB pushes down to the
Parquet scans (each then opens one file), and appends the rows to a temporary table that dbt materializes.

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

from ingest.marts.incremental import groups_to_compute

PARTITION = "lake_partition"


class NotCopartitioned(RuntimeError):
    """The lake holds documents outside their span's partition (the build's error line says which)."""


def check_copartitioned(session: Any, spans: Any, documents: Any) -> Any:
    """Every document row lies in the partition of its span. Before the first partition: every span_documents
    partition name is a spans partition's. Returned, for after each partition: its facts count as many documents
    as the partition holds (`sum(n_docs)` against a row count DuckDB reads from the Parquet footers), so a
    document whose span lies elsewhere is caught at no extra scan."""
    q_spans, q_docs = spans.sql_query(), documents.sql_query()
    stray = session.execute(f"""
        select distinct {PARTITION} from ({q_docs})
        where {PARTITION} not in (select distinct {PARTITION} from ({q_spans}))
        order by 1 limit 1""").fetchall()
    for (name,) in stray:
        raise NotCopartitioned(_message(name, "has no spans partition of that name"))

    def after(partition: str, table: str) -> None:
        [(held,)] = session.execute(f"select count(*) from ({q_docs}) where {PARTITION} = $p",
                                    {"p": partition}).fetchall()
        [(joined,)] = session.execute(f'select coalesce(sum(n_docs), 0) from "{table}" where {PARTITION} = $p',
                                      {"p": partition}).fetchall()
        if held != joined:
            raise NotCopartitioned(_message(partition, f"holds {held - joined} document rows whose span is not in "
                                                       "its spans partition"))
    return after


def _message(name: str, what: str) -> str:
    return (f"span_documents partition {name!r} {what}: the generation facts join a span's documents within its "
            "lake partition, as `lmaudit trace` writes them (a batch's spans, span_documents, span_counts and "
            "traced_generations under one name); write the documents under their spans' partition name")


def by_partition(dbt: Any, session: Any, view: Any, inputs: Any, name: str,
                 check: Callable[[], Callable[[str, str], None] | None] | None = None) -> Any:
    """Rows of `view` (a relation with a `lake_partition` column) for the partitions `inputs` says need
    computing, each with its partition's input_hash, as a relation over temporary table `name` (filled one
    partition per query). `check()` runs first and may return a check to run after each partition's insert
    (`check_copartitioned`)."""
    groups = groups_to_compute(dbt, session, inputs, keys=(PARTITION,))
    todo = list(zip(groups.column(PARTITION).to_pylist(), groups.column("input_hash").to_pylist()))
    # also with nothing to compute: documents added under another name must stop an incremental build too
    after = check() if check is not None else None
    query = view.sql_query()
    session.execute(f'create or replace temp table "{name}" as '
                    f"select *, cast(null as varchar) as input_hash from ({query}) where false").fetchall()
    for partition, input_hash in todo:
        session.execute(f'insert into "{name}" select *, $h from ({query}) where {PARTITION} = $p',
                        {"h": input_hash, "p": partition}).fetchall()
        if after is not None:
            after(partition, name)
    return session.table(f'"{name}"')
