"""The generation facts are computed one lake partition at a time (ingest/marts/partitioned.py): the result must
not depend on how the lake's spans are cut into partitions, and a lake whose documents lie outside their span's
partition must stop the build with one line instead of losing documents silently.

Oracle: the same rows written as one partition (the hand-built lake of test_metrics_dbt, whose metrics that test
checks against hand-computed values and an independent Python computation) and cut into several, one
generation's spans split across two of them."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from ingest.build import build
from ingest.home import db_path
from ingest.lake import Lake
from tests.python.test_metrics_dbt import write_lake

pytestmark = pytest.mark.slow

FACTS = ["+int_generation_facts", "stg_corpora"]


def _facts(home: Path) -> list[tuple]:
    with duckdb.connect(str(db_path(home)), read_only=True) as con:
        return con.execute("select * from int_generation_facts order by generation_id, trace_id").fetchall()


def test_facts_do_not_depend_on_how_the_lake_is_partitioned(tmp_path):
    one, many = tmp_path / "one", tmp_path / "many"
    write_lake(one)
    write_lake(many)
    lake = Lake(many)
    split = "unc_0"  # two long-ish spans with documents and counts: both partitions contribute
    spans = lake.read("spans").to_pylist()
    assert sum(s["generation_id"] == split for s in spans) == 2
    docs = lake.read("span_documents").to_pylist()
    split_spans = sorted((s for s in spans if s["generation_id"] == split), key=lambda s: s["span_id"])
    part_of = {s["span_id"]: f"b{k}" for k, s in enumerate(split_spans)}
    part_of.update({s["span_id"]: f"p{sum(map(ord, s['generation_id'])) % 3}" for s in spans
                    if s["generation_id"] != split})
    for table in ("spans", "span_documents"):
        (lake.root / table / "s.parquet").unlink()
    for name in sorted(set(part_of.values())):
        lake.write("spans", name, [s for s in spans if part_of[s["span_id"]] == name])
        lake.write("span_documents", name, [d for d in docs if part_of[d["span_id"]] == name])
    assert len(set(part_of.values())) >= 4
    for home in (one, many):
        result = build(home, progress=False, select=FACTS)
        assert result.success, result.failures
    got, want = _facts(many), _facts(one)
    assert len(want) > 20 and got == want
    with duckdb.connect(str(db_path(many)), read_only=True) as con:
        split_rows = con.execute("select count(*) from int_generation_span_facts where generation_id = ?",
                                 [split]).fetchone()[0]
    assert split_rows == 2  # the combination across partitions was exercised


def test_documents_outside_their_spans_partition_stop_the_build(tmp_path):
    home = tmp_path / "w"
    write_lake(home)
    lake = Lake(home)
    docs = lake.read("span_documents").to_pylist()
    (lake.root / "span_documents" / "s.parquet").unlink()
    lake.write("span_documents", "d", docs)  # not the spans' partition name
    result = build(home, progress=False, select=FACTS)
    assert not result.success
    text = " ".join(result.failures)
    assert "span_documents partition 'd' has no spans partition of that name" in text
    assert "write the documents under their spans' partition name" in text
    assert "Traceback" not in text


def test_a_document_of_a_span_in_another_partition_stops_the_build(tmp_path):
    home = tmp_path / "w"
    write_lake(home)
    lake = Lake(home)
    spans, docs = lake.read("spans").to_pylist(), lake.read("span_documents").to_pylist()
    moved = next(s["span_id"] for s in spans if any(d["span_id"] == s["span_id"] for d in docs))
    for table in ("spans", "span_documents"):
        (lake.root / table / "s.parquet").unlink()
    lake.write("spans", "s", [s for s in spans if s["span_id"] != moved])
    lake.write("spans", "s2", [s for s in spans if s["span_id"] == moved])
    lake.write("span_documents", "s", docs)  # the moved span's documents stay in "s"
    result = build(home, progress=False, select=FACTS)
    assert not result.success
    assert "document rows whose span is not in its spans partition" in " ".join(result.failures)
