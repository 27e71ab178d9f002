"""What a plain `lmaudit build` tests and what only `--full-tests` (and CI) runs.

A plain build leaves out dbt's unit tests and the full-scan key tests of `span_documents` (20M rows at paper
scale); the tracer guarantees those keys where it writes (`check_batch_keys`), and the cheap `unique` test on
`spans` still fails a plain build on the one way a repeated key can reach the lake (the same span written
twice). Oracles: hand-made batches and lakes that break exactly one property.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ingest.build import build
from ingest.lake import Lake
from ingest.trace.run import check_batch_keys

SELECT = ["stg_spans", "stg_span_documents", "int_propme_params"]  # int_propme_params has a unit test


def _span(sid: str) -> dict:
    return {"span_id": sid, "trace_id": "t1", "generation_id": "g1", "start_tok": 0, "end_tok": 5, "length": 5}


def _doc(did: str, sid: str) -> dict:
    return {"span_document_id": did, "span_id": sid, "shard": 0, "doc_ix": 1, "match_tier": "partial"}


def test_batch_keys_accept_a_consistent_batch() -> None:
    check_batch_keys([_span("a"), _span("b")], [_doc("d1", "a"), _doc("d2", "b")], [{"span_id": "a"}])


@pytest.mark.parametrize("spans,docs,counts,message", [
    ([_span("a"), _span("a")], [], [], "same span twice"),
    ([_span("a")], [_doc("d1", "b")], [], "document row of span b"),
    ([_span("a")], [], [{"span_id": "c"}], "count row of span c"),
])
def test_batch_keys_refuse_a_broken_batch(spans, docs, counts, message) -> None:
    with pytest.raises(RuntimeError, match=message):
        check_batch_keys(spans, docs, counts)


def _lake(home: Path, repeat_span: bool) -> None:
    """Two trace partitions. Both hold document key 'd1' (what a hand-made lake can do and the tracer cannot);
    with `repeat_span` the second also repeats span 'a' (what tracing one generation from two sources under
    one pass would give)."""
    lake = Lake(home)
    lake.write("trace_runs", "t", [{"trace_id": "t1", "mode": "mixed"}])
    lake.write("runs", "r", [{"run_id": "r1", "model": "m", "setting": "unconditional"}])
    lake.write("generations", "g", [{"generation_id": "g1", "run_id": "r1", "sample_idx": 0, "text": "x"}])
    lake.write("spans", "p1", [_span("a")])
    lake.write("span_documents", "p1", [_doc("d1", "a")])
    lake.write("spans", "p2", [_span("a" if repeat_span else "b")])
    lake.write("span_documents", "p2", [_doc("d1", "b")])


def _unit_tests_run(home: Path) -> int:
    res = json.loads((home / "dbt" / "target" / "run_results.json").read_text())["results"]
    return sum(r["unique_id"].startswith("unit_test.") for r in res)


@pytest.mark.slow
def test_plain_build_skips_full_scan_and_unit_tests_full_tests_runs_them(tmp_path: Path) -> None:
    home = tmp_path / "w"
    _lake(home, repeat_span=False)
    plain = build(home, select=SELECT, progress=False)
    assert plain.success, plain.failures
    assert _unit_tests_run(home) == 0
    full = build(home, select=SELECT, progress=False, full_tests=True)
    assert not full.success
    assert any("unique_stg_span_documents_span_document_id" in f for f in full.failures), full.failures
    assert _unit_tests_run(home) >= 1


@pytest.mark.slow
def test_plain_build_still_fails_on_a_span_written_twice(tmp_path: Path) -> None:
    home = tmp_path / "w"
    _lake(home, repeat_span=True)
    plain = build(home, select=SELECT, progress=False)
    assert not plain.success
    assert any("unique_stg_spans_span_id" in f for f in plain.failures), plain.failures
