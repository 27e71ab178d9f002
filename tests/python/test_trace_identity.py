"""A tracing pass is named by what it traced against, not where or when the index was built (issue 28: two
fresh warehouses gave different bootstrap endpoints because the pass id hashed absolute paths and build times,
and every PropMe bootstrap is seeded from it)."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

from ingest.index.build import IndexManifest
from ingest.lake import Lake
from ingest.trace.params import TraceParams
from ingest.trace.run import TraceJob, manifest_identity, trace_generations


def _moved_copy(index: Path, dest: Path) -> Path:
    """The same index files elsewhere, with another build time and other paths in its manifest."""
    shutil.copytree(index, dest)
    path = IndexManifest.path_in(dest)
    m = json.loads(path.read_text())
    text = json.dumps(m).replace(str(index.parent), "/somewhere/else")
    m = json.loads(text)
    m["built_at"] = "2031-01-01T00:00:00+00:00"
    m["timings"] = {"total_s": 99.0}
    path.write_text(json.dumps(m))
    return dest


def test_same_content_same_pass_elsewhere(mini_stack, tmp_path: Path) -> None:
    index = Path(mini_stack["index"])
    other = _moved_copy(index, tmp_path / "elsewhere" / "index")
    assert IndexManifest.path_in(other).read_bytes() != IndexManifest.path_in(index).read_bytes()
    a, b = TraceJob((str(index),), TraceParams()), TraceJob((str(other),), TraceParams())
    assert a.trace_id == b.trace_id
    assert a.legacy_trace_id != b.legacy_trace_id  # the old id differed: that was the bug


def test_content_or_parameters_change_the_pass(mini_stack, tmp_path: Path) -> None:
    index = Path(mini_stack["index"])
    other = _moved_copy(index, tmp_path / "changed")
    path = IndexManifest.path_in(other)
    m = json.loads(path.read_text())
    m["n_tokens"] += 1
    path.write_text(json.dumps(m))
    assert TraceJob((str(index),), TraceParams()).trace_id != TraceJob((str(other),), TraceParams()).trace_id
    params = TraceParams()
    changed = replace(params, max_docs=params.max_docs + 1)
    assert TraceJob((str(index),), params).trace_id != TraceJob((str(index),), changed).trace_id


def test_identity_drops_place_and_time_only() -> None:
    m = {"built_at": "t", "timings": {"s": 1}, "source_root": "/a", "data_dir": None, "n_tokens": 5,
         "tokenizer": {"name": "/a/tok.json", "path": "/a/tok.json", "sha256": "abc"},
         "sources": [{"path": "/a/c.jsonl", "rel_path": "c.jsonl", "sha256": "def"}], "other": "/abs/path"}
    assert manifest_identity(m) == {"n_tokens": 5, "tokenizer": {"sha256": "abc"},
                                    "sources": [{"rel_path": "c.jsonl", "sha256": "def"}], "other": ""}


def test_a_warehouse_with_an_old_pass_keeps_it(mini_stack, tmp_path: Path, monkeypatch) -> None:
    """A pass written under the pre-2026-12-03 id is reused, so an existing warehouse is not traced again."""
    lake = Lake(tmp_path / "wh")
    lake.init()
    job = TraceJob((str(mini_stack["index"]),), TraceParams())
    legacy, current = job.legacy_trace_id, job.trace_id
    with monkeypatch.context() as m:  # the code before the change named its pass by the legacy id
        m.setattr(TraceJob, "trace_id", property(lambda self: legacy))
        m.setattr(TraceJob, "legacy_trace_id", property(lambda self: "none-such"))
        first = trace_generations(lake, job, [("g1", "The cat sat on the mat.")], "file:x", progress=False)
    assert first.trace_id == legacy
    again = trace_generations(lake, job, [("g1", "The cat sat on the mat.")], "file:x", progress=False)
    assert again.trace_id == legacy and again.n_skipped == again.n_batches == 1  # nothing traced twice
    fresh = Lake(tmp_path / "wh2")
    fresh.init()
    assert trace_generations(fresh, job, [("g1", "x y")], "file:x", progress=False).trace_id == current
