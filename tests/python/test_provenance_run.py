"""`lmaudit provenance` on hand-built lake rows (no index, no dbt): what it reads, resuming, one-line errors."""

from __future__ import annotations

import pytest

from ingest.errors import UserError
from ingest.lake import Lake, make_key
from ingest.provenance.run import default_min_span, run_provenance

SPAN_TEXT = "please write to jane.doe@example.com about release 2.13.0"


def _rows(lake: Lake, index_dir: str = '["/nowhere/index"]', doc: bool = True) -> None:
    lake.write("generations", "g", [{"generation_id": "g1", "run_id": "r", "prompt_id": None, "sample_idx": 0,
                                     "seed": 0, "text": "x " + SPAN_TEXT, "n_tokens": 30, "finish_reason": "length"}])
    lake.write("trace_runs", "t", [{"trace_id": "t", "corpus_id": None, "index_dir": index_dir, "mode": "mixed",
                                    "params": "{}", "code_version": "0", "started_at": None, "finished_at": None}])
    span = {"trace_id": "t", "generation_id": "g1", "count": 1, "unigram_logprob": -1.0, "kept": True,
            "merged": False, "is_full": False}
    lake.write("spans", "s", [
        {**span, "span_id": "long", "start_tok": 0, "end_tok": 30, "length": 30, "text": SPAN_TEXT},
        {**span, "span_id": "short", "start_tok": 40, "end_tok": 45, "length": 5, "text": "call +1 650-253-0000"},
        # a prompt trace (no generation of that id): chance level, not a reproduction
        {**span, "span_id": "prompt", "generation_id": "p1", "start_tok": 0, "end_tok": 40, "length": 40,
         "text": "mail bob@example.org"},
    ])
    if doc:
        _doc(lake)


def _doc(lake: Lake) -> None:
    lake.write("span_documents", "s", [{"span_document_id": make_key("long", 0, 3), "span_id": "long", "shard": 0,
                                        "doc_ix": 3}])


def _n(lake: Lake, table: str) -> int:
    return lake.read(table).num_rows


def test_spans_are_scanned_once_and_short_or_prompt_spans_never(lake: Lake) -> None:
    _rows(lake, doc=False)
    s = run_provenance(lake, progress=False)
    assert s.min_span == default_min_span() == 20
    assert (s.n_documents, s.n_spans, s.findings) == (0, 1, {"email": 1, "phone": 0, "secret": 0})
    f = lake.read("personal_data_findings").to_pylist()
    assert [(x["span_id"], x["kind"], x["masked"], x["start_char"], x["end_char"]) for x in f] == [
        ("long", "email", "ja***email", 16, 36)]
    assert SPAN_TEXT[16:36] == "jane.doe@example.com"
    again = run_provenance(lake, progress=False)  # nothing new: nothing written
    assert (again.n_spans, again.n_spans_skipped) == (0, 1)
    assert (_n(lake, "personal_data_scans"), _n(lake, "personal_data_findings")) == (1, 1)
    lower = run_provenance(lake, min_span=5, progress=False)  # --min-span 5 adds the short span only
    assert (lower.n_spans, lower.findings["phone"]) == (1, 1) and _n(lake, "personal_data_scans") == 2
    rescan = run_provenance(lake, rescan=True, progress=False)  # forgets everything, reads again
    assert rescan.n_spans == 1 and _n(lake, "personal_data_scans") == 1


def test_a_missing_index_is_one_line_and_nothing_is_written(lake: Lake) -> None:
    _rows(lake)
    with pytest.raises(UserError, match="/nowhere/index.*re-attach"):
        run_provenance(lake, progress=False)
    assert [_n(lake, t) for t in ("document_provenance", "personal_data_scans", "personal_data_findings")] == [0, 0, 0]


def test_a_rescan_refused_for_a_missing_index_keeps_what_was_read(lake: Lake) -> None:
    _rows(lake, doc=False)
    run_provenance(lake, progress=False)
    _doc(lake)  # a document whose index has moved away since
    with pytest.raises(UserError, match="/nowhere/index"):
        run_provenance(lake, rescan=True, progress=False)
    assert (_n(lake, "personal_data_scans"), _n(lake, "personal_data_findings")) == (1, 1)


def test_min_span_must_be_positive(lake: Lake) -> None:
    with pytest.raises(UserError, match="--min-span"):
        run_provenance(lake, min_span=0, progress=False)
