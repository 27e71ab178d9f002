"""Helpers shared by the Python behind the dbt models (`ingest.marts.propme`, `ingest.marts.mixture`)."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import pyarrow as pa

T = TypeVar("T")
R = TypeVar("R")


def arrow_of(relation: Any) -> pa.Table:
    """What `dbt.ref` gives a Python model (a DuckDB relation), or a pandas frame, as an Arrow table."""
    if isinstance(relation, pa.Table):
        return relation
    try:
        import pandas as pd

        if isinstance(relation, pd.DataFrame):
            return pa.Table.from_pandas(relation, preserve_index=False)
    except ImportError:  # pragma: no cover
        pass
    for name in ("to_arrow_table", "fetch_arrow_table", "arrow"):
        fn = getattr(relation, name, None)
        if fn is not None:
            res = fn()
            return res.read_all() if isinstance(res, pa.RecordBatchReader) else res
    raise TypeError(f"cannot read {type(relation).__name__} as Arrow")


def finite(x: Any) -> float | None:
    """A float, or None for None/NaN (a NULL in the output table, never a NaN)."""
    if x is None:
        return None
    v = float(x)
    return None if math.isnan(v) else v


def workers() -> int:
    """Threads for the per-run work: at most 2 (the models run inside dbt, beside DuckDB's own threads)."""
    return max(1, min(2, os.cpu_count() or 1))


def parallel(fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """Run fn over items on a few threads (numpy releases the GIL in the heavy parts); order kept.

    BLAS is held to one thread: a multi-threaded OpenBLAS on a busy 2-core machine made the small matrix
    products of the bootstrap 5-50x slower (see docs/footguns.md)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn
        from contextlib import nullcontext as threadpool_limits
    with threadpool_limits(limits=1):
        if len(items) <= 1 or workers() == 1:
            return [fn(x) for x in items]
        with ThreadPoolExecutor(workers()) as pool:
            return list(pool.map(fn, items))
