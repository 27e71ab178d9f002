"""A trace batch is all-or-nothing: a failure while its partitions are written leaves none of them, and
the next run resumes to the same rows as an uninterrupted one (oracle: a clean trace of the same input)."""

from __future__ import annotations

import pytest

from ingest.lake import Lake
from ingest.trace.params import TraceParams
from ingest.trace.run import TraceJob, trace_generations

TABLES = ("spans", "span_documents", "traced_generations", "span_counts")


def _gens(mini_stack):
    return [(f"doc{i}", d["text"][:300]) for i, d in enumerate(mini_stack["docs"][:6])]


def _rows(lake: Lake, table: str) -> list:
    t = lake.read(table)
    return sorted(map(repr, t.to_pylist())) if t is not None else []


def test_failure_inside_a_batch_leaves_no_partial_batch(mini_stack, tmp_path, monkeypatch) -> None:
    job = TraceJob((str(mini_stack["index"]),), TraceParams())
    clean = Lake(tmp_path / "clean")
    trace_generations(clean, job, _gens(mini_stack), "run:r", batch_size=2, progress=False)

    lake = Lake(tmp_path / "broken")
    real_write = Lake.write
    calls = {"span_counts": 0}

    def flaky(self, table, partition, rows, *a, **kw):
        if table == "span_counts":
            calls["span_counts"] += 1
            if calls["span_counts"] == 2:  # the second batch dies on its last partition
                raise OSError("disk vanished")
        return real_write(self, table, partition, rows, *a, **kw)

    monkeypatch.setattr(Lake, "write", flaky)
    with pytest.raises(OSError):
        trace_generations(lake, job, _gens(mini_stack), "run:r", batch_size=2, progress=False)
    monkeypatch.setattr(Lake, "write", real_write)
    parts = {t: set(lake.partitions(t)) for t in TABLES}
    assert len(parts["span_counts"]) == 1, "only the first batch committed"
    for t in TABLES:
        assert parts[t] == parts["span_counts"], f"{t} holds a partition of an uncommitted batch"

    s = trace_generations(lake, job, _gens(mini_stack), "run:r", batch_size=2, progress=False)
    assert s.n_skipped == 1
    for t in TABLES:
        assert _rows(lake, t) == _rows(clean, t), t
