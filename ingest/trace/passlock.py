"""One `lmaudit trace` of a tracing pass at a time, per warehouse.

A trace decides which partitions its rows replace when it starts (the stale batches of its own source, and the
batches of the pass that hold its generation ids: `ingest/trace/supersede.py`) and writes its own batches
minutes later. Two traces of the same pass at once (same index and parameters) that share generation ids, e.g.
a run and a file exported from it, each planned without the other's batches, so both wrote theirs and the ids
ended up traced twice (`lmaudit build`'s unique tests then fail). The second trace now waits, saying so, until
the first ends; traces of other passes (another corpus, other parameters) still run side by side.

The lock is a flock on a file in the warehouse folder (`.trace-<pass>.lock`, beside the lake's own
`.lake.lock`): the kernel releases it when the process ends, however it ends, so a killed trace never leaves
the pass locked.
"""

from __future__ import annotations

import fcntl
import functools
import sys
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


def lock_path(home, trace_id: str):
    """The lock file of a pass in a warehouse."""
    from pathlib import Path

    return Path(home) / f".trace-{trace_id[:16]}.lock"


def one_trace_per_pass(fn: F) -> F:
    """Decorate `fn(lake, job, ...)` to hold the pass's lock while it runs."""

    @functools.wraps(fn)
    def locked(lake, job, *args, **kwargs):
        try:
            key = job.trace_id
            fh = open(lock_path(lake.home, key), "a")  # noqa: SIM115 - closed below
        except OSError:  # no manifest (the trace names it in one line) or a read-only warehouse: no lock
            return fn(lake, job, *args, **kwargs)
        try:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                print(f"waiting for another `lmaudit trace` of tracing pass {key[:12]} (same index and "
                      "parameters) in this warehouse to finish: two at once could both trace the same "
                      "generations (use --workers or --threads to trace faster in one command)",
                      file=sys.stderr, flush=True)
                fcntl.flock(fh, fcntl.LOCK_EX)
            return fn(lake, job, *args, **kwargs)
        finally:
            fh.close()  # releases the lock

    return locked  # type: ignore[return-value]
