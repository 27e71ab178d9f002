"""Review of 69ea0ba (the generation facts one lake partition at a time).

Oracles: a `--full-refresh` build of the same lake (incremental builds must equal it), the column types of
`int_generation_facts` before 69ea0ba (read off its old SQL: counts bigint, document counts hugeint), and the
cost of the span facts on a lake cut into partitions the way `lmaudit trace` cuts it (64 generations each, so
~3,000 partitions at paper scale) against the same rows in one partition.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import duckdb
import pytest

from ingest.build import build
from ingest.home import db_path
from ingest.lake import Lake
from tests.python.test_metrics_dbt import write_lake

pytestmark = pytest.mark.slow

FACTS = ["+int_generation_facts", "stg_corpora"]
NO_TESTS = ["test_type:data", "test_type:unit"]


def _build(home: Path, full_refresh: bool = False, vars_: str | None = None, exclude=NO_TESTS):
    res = build(home, progress=False, select=FACTS, exclude=exclude, full_refresh=full_refresh, vars_=vars_)
    assert res.success, res.failures
    return res


def _rows(home: Path, table: str) -> list[tuple]:
    """Rows sorted, floats to 12 significant digits (sums over the same rows in another order)."""
    def norm(v):
        return float(f"{v:.12g}") if isinstance(v, float) else v

    with duckdb.connect(str(db_path(home)), read_only=True) as con:
        rows = con.execute(f'select * from "{table}"').fetchall()
    return sorted((tuple(norm(v) for v in r) for r in rows), key=repr)


def _both(home: Path) -> dict[str, list[tuple]]:
    return {t: _rows(home, t) for t in ("int_generation_facts", "int_generation_span_facts")}


def _by_run(home: Path) -> None:
    """The hand-built lake's spans, documents and traced rows cut into one partition per run, as `lmaudit trace`
    would write them (a batch's four tables under one name)."""
    lake = Lake(home)
    run_of = {g["generation_id"]: g["run_id"] for g in lake.read("generations").to_pylist()}
    spans, docs = lake.read("spans").to_pylist(), lake.read("span_documents").to_pylist()
    traced = lake.read("traced_generations").to_pylist()
    part_of_span = {s["span_id"]: f"b_{run_of[s['generation_id']]}" for s in spans}
    with lake.transaction():
        lake.delete("spans", "s")
        lake.delete("span_documents", "s")
        lake.delete("traced_generations", "tg")
        for name in sorted(set(part_of_span.values()) | {f"b_{r}" for r in run_of.values()}):
            lake.write("spans", name, [s for s in spans if part_of_span[s["span_id"]] == name])
            lake.write("span_documents", name, [d for d in docs if part_of_span[d["span_id"]] == name])
            lake.write("traced_generations", name,
                       [t for t in traced if f"b_{run_of[t['generation_id']]}" == name])


def _retrace_and_remove(home: Path) -> None:
    """unc_0 (r_unc) gets a new text and is retraced into its own new partition (one more document on its long
    span); r_unc's old partition loses it. Run r3_unc's trace partition is removed (its generations become
    untraced). gen_g1_1 (r_gen) gets a new text too and is retraced into a partition with one span and no
    span_documents file at all."""
    lake = Lake(home)
    new_text, g11_text = "a license text follows, retraced", "hello again, regenerated"
    gens = lake.read("generations").to_pylist()
    for g in gens:
        if g["generation_id"] == "unc_0":
            g["text"] = new_text
        if g["generation_id"] == "gen_g1_1":
            g["text"] = g11_text
    spans = lake.read("spans", "b_r_unc").to_pylist()
    docs = lake.read("span_documents", "b_r_unc").to_pylist()
    traced = lake.read("traced_generations", "b_r_unc").to_pylist()
    moved = {s["span_id"] for s in spans if s["generation_id"] == "unc_0"}
    extra = {**next(d for d in docs if d["span_id"] == "unc_0:0-70"), "span_document_id": "unc_0:0-70:9",
             "doc_ix": 9, "match_tier": "exact_full_raw", "nv_recall": 0.25}
    retraced = [{**t, "text_hash": hashlib.md5(new_text.encode()).hexdigest()} for t in traced
                if t["generation_id"] == "unc_0"]
    g_traced = lake.read("traced_generations", "b_r_gen").to_pylist()
    with lake.transaction():
        lake.write("generations", "g", gens)
        lake.write("spans", "b_r_unc", [s for s in spans if s["span_id"] not in moved])
        lake.write("span_documents", "b_r_unc", [d for d in docs if d["span_id"] not in moved])
        lake.write("traced_generations", "b_r_unc", [t for t in traced if t["generation_id"] != "unc_0"])
        lake.write("spans", "b_unc_0", [s for s in spans if s["span_id"] in moved])
        lake.write("span_documents", "b_unc_0", [d for d in docs if d["span_id"] in moved] + [extra])
        lake.write("traced_generations", "b_unc_0", retraced)
        for table in ("spans", "span_documents", "traced_generations"):
            lake.delete(table, "b_r3_unc")
        # gen_g1_1 retraced by itself: one 60-token span, no documents (its partition has no span_documents file)
        lake.write("traced_generations", "b_r_gen", [t for t in g_traced if t["generation_id"] != "gen_g1_1"])
        lake.write("traced_generations", "b_g11", [{**t, "text_hash": hashlib.md5(g11_text.encode()).hexdigest()}
                                                   for t in g_traced if t["generation_id"] == "gen_g1_1"])
        lake.write("spans", "b_g11", [{"span_id": "gen_g1_1:0-60", "trace_id": "t1", "generation_id": "gen_g1_1",
                                       "start_tok": 0, "end_tok": 60, "length": 60, "is_full": False, "kept": True,
                                       "text": g11_text}])


def test_incremental_span_facts_equal_a_full_refresh(tmp_path: Path) -> None:
    """A generation retraced into a new partition, a partition that lost spans, a removed partition, a
    partition without documents; then changed vars (long-span and loop thresholds, blank outputs): each
    incremental build equals a full refresh, row for row, in both the span facts and the generation facts."""
    home = tmp_path / "w"
    write_lake(home)
    _by_run(home)
    _build(home)
    before = _both(home)
    _retrace_and_remove(home)
    _build(home)
    incremental = _both(home)
    _build(home, full_refresh=True)
    assert _both(home) == incremental
    assert incremental != before
    with duckdb.connect(str(db_path(home)), read_only=True) as con:
        got = {r[0]: r[1:] for r in con.execute(
            "select generation_id, is_traced, n_spans, cast(n_docs as bigint) from int_generation_facts "
            "where generation_id in ('unc_0', 'gen_g1_1', 'm3_0')").fetchall()}
    assert got == {"unc_0": (True, 2, 4), "gen_g1_1": (True, 1, 0), "m3_0": (False, None, None)}, got
    assert {r[0] for r in incremental["int_generation_span_facts"]} >= {"b_unc_0", "b_g11"}
    assert not any(r[0] == "b_r3_unc" for r in incremental["int_generation_span_facts"])

    for vars_ in ("{propme_long_span_tokens: 30, propme_loop_min_tokens: 35}",
                  "{propme_long_span_tokens: 30, propme_loop_min_tokens: 35, propme_blank_outputs_match: true}"):
        _build(home, vars_=vars_)
        incremental = _both(home)
        _build(home, full_refresh=True, vars_=vars_)
        assert _both(home) == incremental, vars_


def test_a_var_the_span_facts_do_not_read_keeps_their_rows(tmp_path: Path) -> None:
    """A bootstrap or metric var changes no span fact: every partition keeps its rows and input hash (they were
    all recomputed when the hash covered every propme_* var, ~57 s at 16x). A loop var changes the hashes."""
    home = tmp_path / "w"
    write_lake(home)
    _by_run(home)
    _build(home)
    before = _rows(home, "int_generation_span_facts")
    _build(home, vars_="{propme_bootstrap_resamples: 7, propme_mid_span_tokens: 20, propme_blank_outputs_match: true}")
    assert _rows(home, "int_generation_span_facts") == before  # input_hash included

    def hashes() -> set[str]:
        with duckdb.connect(str(db_path(home)), read_only=True) as con:
            return {r[0] for r in con.execute("select distinct input_hash from int_generation_span_facts").fetchall()}

    kept = hashes()
    _build(home, vars_="{propme_loop_min_share: 0.8}")
    assert kept and hashes().isdisjoint(kept)


def test_fact_column_types_are_those_before_the_change(tmp_path: Path) -> None:
    """Counts stay bigint and document counts hugeint, as the one-query form gave (count(*) summed)."""
    home = tmp_path / "w"
    write_lake(home)
    _build(home)
    with duckdb.connect(str(db_path(home)), read_only=True) as con:
        types = dict(con.execute("select column_name, data_type from information_schema.columns "
                                 "where table_name = 'int_generation_facts'").fetchall())
    want = {"n_spans": "BIGINT", "n_loop_spans": "BIGINT", "n_long_spans": "BIGINT", "longest_span": "INTEGER",
            "longest_nonloop_span": "INTEGER", "longest_long_span_length": "INTEGER", "n_docs": "HUGEINT",
            "n_nv_docs": "HUGEINT", "n_nv_docs_long": "HUGEINT", "nv_sum": "DOUBLE", "nv_sum_long": "DOUBLE",
            "full_match_raw": "BOOLEAN", "long_spans_all_loops": "BOOLEAN"}
    assert {k: types[k] for k in want} == want


def test_a_lake_without_documents_builds(tmp_path: Path) -> None:
    """Spans but no span_documents rows (only the zero-row _schema file): no co-partition alarm, no documents.
    With every data test (the span facts' unique and not_null tests included)."""
    home = tmp_path / "w"
    write_lake(home)
    Lake(home).delete("span_documents", "s")
    _build(home, exclude=())
    with duckdb.connect(str(db_path(home)), read_only=True) as con:
        n, docs = con.execute("select count(*), sum(n_docs) from int_generation_facts where is_traced").fetchone()
    assert n > 10 and docs == 0


def test_documents_added_outside_their_spans_partition_stop_an_incremental_build(tmp_path: Path) -> None:
    """docs/warehouse.md: documents under another name than their spans' stop the build, never are lost
    silently. A full refresh of this lake stops; so must an incremental build in which no spans partition
    changed (the co-partition check ran only when some partition was computed)."""
    home = tmp_path / "w"
    write_lake(home)
    _build(home)
    Lake(home).write("span_documents", "d2", [{"span_document_id": "unc_3:0-60:7", "span_id": "unc_3:0-60",
                                               "shard": 0, "doc_ix": 7, "match_tier": "partial", "nv_recall": 0.5}])
    for full_refresh in (False, True):
        res = build(home, progress=False, select=FACTS, exclude=NO_TESTS, full_refresh=full_refresh)
        assert not res.success, full_refresh
        assert "span_documents partition 'd2' has no spans partition of that name" in " ".join(res.failures)


# ------------------------------------------------------------------------ cost on a lake cut like `lmaudit trace`
N_PARTS = 200


def _many_partitions(home: Path, n: int) -> None:
    """The hand-built lake plus `n` small trace batches (one prompt-trace generation each: a span and a document),
    written as `n` partitions; with n == 1 the same rows go into one partition."""
    lake = Lake(home)
    spans = [{"span_id": f"prompt:x{i}:0-30", "trace_id": "t1", "generation_id": f"prompt:x{i}", "start_tok": 0,
              "end_tok": 30, "length": 30, "is_full": True, "kept": True, "text": f"prompt text {i}"}
             for i in range(N_PARTS)]
    docs = [{"span_document_id": f"{s['span_id']}:0", "span_id": s["span_id"], "shard": 0, "doc_ix": 1,
             "match_tier": "partial", "nv_recall": 0.5} for s in spans]
    per = -(-N_PARTS // n)
    for k in range(0, N_PARTS, per):
        lake.write("spans", f"x{k:05d}", spans[k:k + per])
        lake.write("span_documents", f"x{k:05d}", docs[k:k + per])


def _node_seconds(home: Path, node: str) -> float:
    res = json.loads((home / "dbt" / "target" / "run_results.json").read_text())["results"]
    return next(r["execution_time"] for r in res if r["unique_id"].endswith(f".{node}"))


# review of 69ea0ba: per partition a query listing every file cost partitions x files (0.06 s for 1 partition,
# 11.5 s for 200, 42 s for 400); now a range of partitions per query (ingest/marts/partitioned.py)
def test_span_facts_cost_does_not_grow_with_the_partition_count(tmp_path: Path) -> None:
    seconds = {}
    for n in (1, N_PARTS):
        home = tmp_path / f"w{n}"
        write_lake(home)
        _many_partitions(home, n)
        _build(home)
        seconds[n] = _node_seconds(home, "int_generation_span_facts")
    print(seconds)
    # the same rows: 200 small partitions may cost a few seconds more than one, not ~0.1 s each
    assert seconds[N_PARTS] < seconds[1] + 5.0, seconds


def test_partition_ranges_never_span_a_kept_partition() -> None:
    """Ranges of partitions to compute (ingest/marts/partitioned.py): sorted, at most max_rows spans each (a larger
    partition alone), and never across a partition whose rows are kept (its files would be read for nothing)."""
    from ingest.marts.partitioned import partition_ranges

    names, rows = ["d", "a", "b", "f", "g", "h"], [1, 1, 1, 5, 1, 1]
    assert partition_ranges(names, rows, 3) == [("a", "d"), ("f", "f"), ("g", "h")]
    assert partition_ranges(names, rows, 3, others=["c", "e"] + names) == [("a", "b"), ("d", "d"), ("f", "f"),
                                                                            ("g", "h")]
    assert partition_ranges(["a", "c"], [1, 1], 10, others=["a", "b", "c"]) == [("a", "a"), ("c", "c")]
    assert partition_ranges(["a", "c"], [1, 1], 10) == [("a", "c")]
    assert partition_ranges([], [], 10, others=["a"]) == []
