"""Incremental int_document_reproductions (by (run, tracing pass), macros/provenance_incremental.sql),
fct_document_provenance (by document) and fct_explore_generations (by run, ordinals moved in place): an
incremental build after changes to the lake gives the same tables as a `--full-refresh` build of the same lake
(the oracle: everything recomputed from nothing).

On the hand-built lake of test_metrics_dbt: build; add a run with its trace, change the text of a generation of
an existing run, remove a run (test_incremental_build's changes); build incrementally; compare both tables row
for row (order-free) with a full refresh. Rows of groups whose inputs did not change are reused, not recomputed;
a changed var recomputes every group.
"""

from __future__ import annotations

import math
from pathlib import Path

import duckdb
import pytest

from ingest.build import build
from ingest.home import db_path
from ingest.lake import Lake

from test_incremental_build import _change_lake
from test_metrics_dbt import write_lake

pytestmark = pytest.mark.slow

SELECT = ["+fct_document_provenance", "+fct_explore_generations"]
NO_TESTS = ["test_type:data", "test_type:unit"]
TABLES = ["int_document_reproductions", "fct_document_provenance", "int_explore_generations",
          "fct_explore_generations"]


def _build(home: Path, full_refresh: bool = False, vars_: str | None = None) -> None:
    res = build(home, select=SELECT, exclude=NO_TESTS, full_refresh=full_refresh, vars_=vars_, progress=False)
    assert res.success, res.failures


def _tables(home: Path) -> dict[str, list[tuple]]:
    def norm(v):
        if isinstance(v, list):
            return tuple(norm(x) for x in v)
        return float(f"{v:.12g}") if isinstance(v, float) and math.isfinite(v) else v

    with duckdb.connect(str(db_path(home)), read_only=True) as con:
        return {name: sorted((tuple(norm(v) for v in r) for r in con.execute(f'select * from "{name}"').fetchall()),
                             key=repr) for name in TABLES}


def _change(home: Path) -> None:
    """test_incremental_build's changes (add r6_unc traced by t2, change a generation of r_unc, remove r5_gen:
    of these only r6_unc reproduces documents), then change unc_0's text (it reproduces documents: its trace is
    no longer current) and remove run r_gen (its generations stay in the lake, as a run removed from `runs`)."""
    _change_lake(home)
    lake = Lake(home)
    runs = [r for r in lake.read("runs").to_pylist() if r["run_id"] != "r_gen"]
    gens = lake.read("generations").to_pylist()
    for g in gens:
        if g["generation_id"] == "unc_0":
            g["text"] = "A new text, traced by no pass."
    with lake.transaction():
        for table in ("runs", "generations"):
            for part in lake.partitions(table):
                lake.delete(table, part)
        lake.write("runs", "r", runs)
        lake.write("generations", "g", gens)


def _copy_run(home: Path, src: str, dst: str) -> None:
    """Add run `dst`: run `src`'s generations (same texts) under new ids, with copies of their traces (same
    passes, spans and documents): it reproduces the documents `src` reproduces."""
    lake = Lake(home)
    gens = [g for g in lake.read("generations").to_pylist() if g["run_id"] == src]
    ids = {g["generation_id"] for g in gens}
    spans = [s for s in lake.read("spans").to_pylist() if s["generation_id"] in ids]
    span_ids = {s["span_id"] for s in spans}
    new = {"run_id": dst, "generation_id": lambda v: f"{v}~{dst}", "span_id": lambda v: f"{v}~{dst}",
           "traced_generation_id": lambda v: f"{v}~{dst}", "span_document_id": lambda v: f"{v}~{dst}"}

    def copy(rows: list[dict]) -> list[dict]:
        return [{k: (new[k](v) if callable(new.get(k)) else new.get(k, v)) for k, v in r.items()} for r in rows]

    with lake.transaction():
        lake.write("runs", dst, copy([r for r in lake.read("runs").to_pylist() if r["run_id"] == src]))
        lake.write("generations", dst, copy(gens))
        lake.write("traced_generations", dst,
                   copy([t for t in lake.read("traced_generations").to_pylist() if t["generation_id"] in ids]))
        lake.write("spans", dst, copy(spans))
        lake.write("span_documents", dst,
                   copy([d for d in lake.read("span_documents").to_pylist() if d["span_id"] in span_ids]))


def _runs(home: Path) -> set[str]:
    with duckdb.connect(str(db_path(home)), read_only=True) as con:
        return {r[0] for r in con.execute("select distinct run_id from int_document_reproductions").fetchall()}


def test_incremental_provenance_equals_a_full_refresh(tmp_path: Path) -> None:
    home = tmp_path / "warehouse"
    write_lake(home)
    _build(home)
    before = _tables(home)
    assert before["int_document_reproductions"], "the lake must have reproductions to compare"
    runs_before = _runs(home)

    _change(home)
    # a hand-made change to a group that did not change must survive (its rows are reused) ...
    kept = "r_pre"
    assert {kept, "r_gen", "r_unc"} <= runs_before
    with duckdb.connect(str(db_path(home))) as con:
        con.execute("update int_document_reproductions set longest_span_text = 'tampered' where run_id = ?", [kept])
    _build(home)
    with duckdb.connect(str(db_path(home))) as con:
        assert con.execute("select bool_and(longest_span_text = 'tampered') from int_document_reproductions"
                           " where run_id = ?", [kept]).fetchone()[0]
        con.execute("update int_document_reproductions set longest_span_text = null where run_id = ?", [kept])
    _build(home, full_refresh=True)  # ... and a full refresh undoes it
    refreshed = _tables(home)

    # the oracle: changes to the lake, built incrementally from the first build's tables
    write_lake(home2 := tmp_path / "warehouse2")
    _build(home2)
    _change(home2)
    _build(home2)
    assert _tables(home2) == refreshed
    assert refreshed != before
    runs_after = {r[6] for r in refreshed["int_document_reproductions"]}
    generations_after = {r[10] for r in refreshed["int_document_reproductions"]}
    assert "r6_unc" in runs_after and "r_gen" not in runs_after and "unc_0" not in generations_after

    # one build after: a new run reproducing documents another run reproduces (they must be recomputed: their
    # runs grow), a provenance row (what `lmaudit provenance` read: its document is recomputed), and a hand-made
    # change to a document neither touches (it must survive: reused, not recomputed)
    kept_docs = {(r[0], r[3]): r[19] for r in refreshed["fct_document_provenance"]}  # corpus_key, doc_ix: n_runs
    with duckdb.connect(str(db_path(home2))) as con:
        key_a, ix_a = con.execute("select corpus_key, doc_ix from fct_document_provenance "
                                  "order by corpus_key, doc_ix limit 1").fetchone()
        key_b, ix_b, text_b = con.execute(
            "select corpus_key, doc_ix, longest_span_text from fct_document_provenance where not "
            "list_contains(run_ids, 'r_pre') and (corpus_key, doc_ix) <> (?, ?) limit 1", [key_a, ix_a]).fetchone()
        con.execute("update fct_document_provenance set longest_span_text = 'tampered' "
                    "where corpus_key = ? and doc_ix = ?", [key_b, ix_b])
    _copy_run(home2, "r_pre", "r_pre_copy")
    Lake(home2).write("document_provenance", "p", [{
        "provenance_id": "p1", "corpus_key": key_a, "doc_ix": ix_a, "licence_detected": "MIT", "source": "s"}])
    # ... and two generations of r_unc swap their sample_idx (same ids and texts): the explorer's order inside
    # the run follows, its ordinals compared with a full refresh below
    gens = Lake(home2).read("generations", "g").to_pylist()
    unc = sorted((g for g in gens if g["run_id"] == "r_unc"), key=lambda g: g["sample_idx"])
    first, last = unc[0]["generation_id"], unc[-1]["generation_id"]
    swap = {first: unc[-1]["sample_idx"], last: unc[0]["sample_idx"]}
    Lake(home2).write("generations", "g", [{**g, "sample_idx": swap.get(g["generation_id"], g["sample_idx"])}
                                           for g in gens])
    _build(home2)
    with duckdb.connect(str(db_path(home2)), read_only=True) as con:
        shown = [r[0] for r in con.execute("select generation_id from fct_explore_generations where run_id = 'r_unc' "
                                           "order by ordinal").fetchall()]
    assert shown[0] == last and shown[-1] == first
    grown = {(r[0], r[3]): r[19] for r in _tables(home2)["fct_document_provenance"]}
    assert any(grown[k] == n + 1 for k, n in kept_docs.items())
    with duckdb.connect(str(db_path(home2))) as con:
        assert con.execute("select licence, is_read from fct_document_provenance where corpus_key = ? and doc_ix = ?",
                           [key_a, ix_a]).fetchone() == ("MIT", True)
        assert con.execute("select longest_span_text from fct_document_provenance where corpus_key = ? "
                           "and doc_ix = ?", [key_b, ix_b]).fetchone()[0] == "tampered"
        con.execute("update fct_document_provenance set longest_span_text = ? where corpus_key = ? and doc_ix = ?",
                    [text_b, key_b, ix_b])
    incremental = _tables(home2)
    _build(home2, full_refresh=True)
    refreshed = _tables(home2)
    assert refreshed == incremental

    # a changed var the model reads (mid_span_tokens) recomputes every group
    vars_ = "{propme_mid_span_tokens: 45}"
    _build(home2, vars_=vars_)
    incremental = _tables(home2)
    _build(home2, full_refresh=True, vars_=vars_)
    assert _tables(home2) == incremental
    assert incremental != refreshed
