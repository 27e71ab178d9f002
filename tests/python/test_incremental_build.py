"""Incremental PropMe models: an incremental build after changes to the lake gives the same tables as a
`--full-refresh` build of the same lake (the oracle: everything recomputed from nothing).

On the hand-built lake of test_metrics_dbt: build; then add a run (with its trace), change the text of a
generation of an existing run and remove a run; build incrementally; compare every PropMe mart and the
incremental models (the three per-generation ones, the per-run and per-pair bootstraps) row by row with a full
refresh. Then the same after changing propme_* vars. Rows whose inputs did not change must be reused, not
recomputed (a value written into one by hand survives an incremental build).
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path

import duckdb
import pytest

from ingest.build import build
from ingest.home import db_path
from ingest.lake import Lake

from test_metrics_dbt import write_lake

pytestmark = pytest.mark.slow

SELECT = ["+path:models/marts/propme", "stg_corpora"]
NO_TESTS = ["test_type:data", "test_type:unit"]
INCREMENTAL = ["int_generation_text_checks", "int_span_loops", "int_generation_facts", "int_setting_bootstrap",
               "int_cumulative_filter_bootstrap", "int_source_duplication_bootstrap", "int_run_difference_bootstrap",
               # per (run, tracing pass) SQL models (issue 32)
               "int_metric_units", "int_cumulative_filter_units", "int_long_match_categories"]
VARS = "{propme_bootstrap_resamples: 20}"
NEW_TEXT = "Permission is hereby granted, free of charge, to any person obtaining a copy"


def _build(home: Path, full_refresh: bool = False, vars_: str = VARS) -> None:
    res = build(home, select=SELECT, exclude=NO_TESTS, full_refresh=full_refresh, vars_=vars_, progress=False)
    assert res.success, res.failures


def _tables(home: Path) -> dict[str, list[tuple]]:
    """Every PropMe mart and incremental model, rows sorted (floats rounded to 12 significant digits)."""
    def norm(v):
        if isinstance(v, list):  # bootstrap replicates (NaN = a skipped resample, which != itself)
            return tuple("nan" if isinstance(x, float) and math.isnan(x) else norm(x) for x in v)
        return float(f"{v:.12g}") if isinstance(v, float) and math.isfinite(v) else v

    with duckdb.connect(str(db_path(home)), read_only=True) as con:
        names = [r[0] for r in con.execute(
            "select table_name from information_schema.tables where table_name like 'fct\\_%' escape '\\'"
            " or table_name in ?", [INCREMENTAL]).fetchall()]
        out = {}
        for name in sorted(names):
            rows = con.execute(f'select * from "{name}"').fetchall()
            out[name] = sorted((tuple(norm(v) for v in r) for r in rows), key=repr)
    return out


TAMPER = [("int_generation_text_checks", "is_blank", "generation_id", "pre_p1_0"),
          ("int_span_loops", "is_loop", "generation_id", "pre_p1_0"),
          ("int_generation_facts", "full_match_raw", "generation_id", "pre_p1_0"),
          # a run none of whose generations is tampered above (their facts feed its units)
          ("int_setting_bootstrap", "ci_low", "run_id", "r_gen"),
          ("int_cumulative_filter_bootstrap", "ci_low", "run_id", "r_gen"),
          ("int_source_duplication_bootstrap", "ci_low", "run_id", "r2_pre"),
          # runs whose bootstraps are not tampered above (a changed unit row re-runs its run's bootstrap)
          ("int_metric_units", "unit_kind", "run_id", "r3_unc"),
          ("int_cumulative_filter_units", "unit_kind", "run_id", "r3_unc"),
          ("int_long_match_categories", "category", "run_id", "r_pre")]


def _tamper(home: Path) -> None:
    with duckdb.connect(str(db_path(home))) as con:
        for table, col, key, value in TAMPER:
            con.execute(f"update {table} set {col} = null where {key} = ?", [value])


def _tampered(home: Path) -> list[bool]:
    with duckdb.connect(str(db_path(home)), read_only=True) as con:
        return [con.execute(f"select count(*) > 0 and bool_and({col} is null) from {table} where {key} = ?",
                            [value]).fetchone()[0] for table, col, key, value in TAMPER]


def _change_lake(home: Path) -> None:
    """Add run r6_unc (traced by t2), change the text of m1_u1 (r_unc), remove run r5_gen."""
    lake = Lake(home)
    runs = [r for r in lake.read("runs").to_pylist() if r["run_id"] != "r5_gen"]
    runs.append({**runs[0], "run_id": "r6_unc", "model": "m6", "corpus_id": "c2", "setting": "unconditional"})
    gens = lake.read("generations").to_pylist()
    changed = [g for g in gens if g["run_id"] == "r_unc"][1]
    changed["text"] = NEW_TEXT
    new = [{"generation_id": f"m6_{i}", "run_id": "r6_unc", "prompt_id": None, "sample_idx": i, "text": t,
            "n_tokens": 1} for i, t in enumerate([NEW_TEXT, "I'm sorry. " * 8])]
    traced = [{"traced_generation_id": f"t2:{g['generation_id']}", "trace_id": "t2", "generation_id": g["generation_id"],
               "text_hash": hashlib.md5(g["text"].encode()).hexdigest(), "n_index_tokens": 60} for g in new]
    spans = [{"span_id": "m6_0:0-60", "trace_id": "t2", "generation_id": "m6_0", "start_tok": 0, "end_tok": 60,
              "length": 60, "is_full": True, "kept": True, "text": NEW_TEXT},
             {"span_id": "m6_1:0-40", "trace_id": "t2", "generation_id": "m6_1", "start_tok": 0, "end_tok": 40,
              "length": 40, "is_full": False, "kept": True, "text": "I'm sorry. " * 8}]
    with lake.transaction():
        for table in ("runs", "generations"):
            for part in lake.partitions(table):
                lake.delete(table, part)
        lake.write("runs", "r", runs)
        lake.write("generations", "g", gens + new)
        lake.write("traced_generations", "tg6", traced)
        lake.write("spans", "s6", spans)
        lake.write("span_documents", "s6", [{"span_document_id": "m6_0:0-60:0", "span_id": "m6_0:0-60", "shard": 0,
                                             "doc_ix": 1, "match_tier": "exact_full_raw", "nv_recall": 0.5}])
        lake.write("span_counts", "k6", [{"span_id": "m6_0:0-60", "first50_count": 3, "whole_count": 2}])
    return changed["generation_id"]


def test_incremental_builds_equal_a_full_refresh(tmp_path: Path) -> None:
    home = tmp_path / "warehouse"
    write_lake(home)
    _build(home)

    changed = _change_lake(home)
    _build(home)
    incremental = _tables(home)
    _build(home, full_refresh=True)
    assert _tables(home) == incremental
    facts = {r[0] for r in incremental["int_generation_facts"]}
    assert "m6_0" in facts and not any(g.startswith("m5_") for g in facts)  # added run in, removed run out
    # the changed text was traced in its old form: no longer traced (is_traced), and not by an old row
    assert [r[8] for r in incremental["int_generation_facts"] if r[0] == changed] == [False]
    assert any(r[-2] for r in incremental["int_span_loops"] if r[0] == "m6_1:0-40")  # the new loop span

    # changed research vars: every row that depends on them is recomputed, with the new values
    new_vars = "{propme_bootstrap_resamples: 20, propme_loop_min_tokens: 35, propme_long_span_tokens: 30}"
    _build(home, vars_=new_vars)
    incremental = _tables(home)
    _build(home, full_refresh=True, vars_=new_vars)
    assert _tables(home) == incremental
    assert all(r[3] >= 35 for r in incremental["int_span_loops"])
    assert all('"long_span_tokens":30' in r[-2] for r in incremental["int_generation_facts"])

    # rows whose inputs did not change are reused: a hand-made change survives an incremental build, and a
    # full refresh undoes it
    _tamper(home)
    _build(home, vars_=new_vars)
    assert _tampered(home) == [True] * len(TAMPER)
    _build(home, full_refresh=True, vars_=new_vars)
    assert _tampered(home) == [False] * len(TAMPER)

    # a model whose columns changed since the last build: one line that names the fix
    with duckdb.connect(str(db_path(home))) as con:
        con.execute("alter table int_span_loops add column extra integer")
    res = build(home, select=["int_span_loops"], exclude=NO_TESTS, vars_=new_vars, progress=False)
    assert not res.success and "lmaudit build --full-refresh" in res.failures[0], res.failures
