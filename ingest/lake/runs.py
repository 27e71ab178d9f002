"""Read one run's generations from the lake: the single helper behind trace, classify, score and the demo.

It reads only the run's rows (a pyarrow filter over the partition files, not the whole table into Python),
returns them sorted by generation id so every consumer sees the same order, and says in one line whether
the run is unknown or merely empty.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from ingest.errors import UserError
from ingest.lake.schemas import spec
from ingest.lake.writer import Lake


def run_generations(lake: Lake, run_id: str, columns: tuple[str, ...] = ("generation_id", "text")) -> pa.Table:
    """The run's generations (the given columns), sorted by generation id; a `UserError` when there are none."""
    paths = [str(lake.partition_path("generations", p)) for p in lake.partitions("generations")]
    if paths:  # the partition files only: an empty discovery has no columns to filter on
        try:
            dataset = ds.dataset(paths, format="parquet", schema=spec("generations").schema)
            t = dataset.to_table(columns=list(columns), filter=pc.field("run_id") == run_id)
        except (pa.ArrowInvalid, OSError):
            lake.read("generations")  # names the unreadable partition in one line
            raise
    else:
        t = spec("generations").schema.empty_table().select(list(columns))
    if t.num_rows == 0:
        runs = lake.read("runs").column("run_id").to_pylist()
        if run_id not in runs:
            known = ", ".join(sorted(runs)[:10]) or "none"
            raise UserError(f"unknown run {run_id!r}: run {run_id!r} has no generations in the warehouse; "
                            f"known runs: {known}")
        raise UserError(f"run {run_id!r} has no generations; generate (or import) samples first")
    return t.sort_by("generation_id")


def run_texts(lake: Lake, run_id: str) -> list[tuple[str, str]]:
    """[(generation_id, text)] of one run, sorted by id."""
    t = run_generations(lake, run_id)
    return list(zip(t.column("generation_id").to_pylist(), t.column("text").to_pylist()))
