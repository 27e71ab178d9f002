"""Real `dbt build` (dbt-duckdb, file-backed DuckDB) on empty and non-empty lakes."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from ingest.build import build
from ingest.home import db_path
from ingest.importers.generations import import_generations
from ingest.lake import TABLES, Lake, make_key

from conftest import run_cli

pytestmark = pytest.mark.slow


def _query(home: Path, sql: str):
    with duckdb.connect(str(db_path(home)), read_only=True) as con:
        return con.execute(sql).fetchall()


def test_build_on_an_empty_lake_gives_zero_row_models(home: Path) -> None:
    result = build(home, progress=False)
    assert result.success, result.failures
    assert result.counts["ok"] >= len(TABLES)
    for table in TABLES:
        assert _query(home, f"select count(*) from stg_{table}") == [(0,)]


def test_build_on_imported_generations(home: Path, tmp_path: Path) -> None:
    f = tmp_path / "g.jsonl"
    f.write_text("".join(json.dumps({"prompt": p, "text": f"{p} and more {k}", "sample_idx": k}) + "\n"
                         for p in ("Hello", "Goodbye") for k in range(3)))
    import_generations(Lake(home), f, run_id="r1", model="m", setting="generic")
    result = build(home, progress=False, full_tests=True)  # every unit test of the project, as CI runs them
    assert result.success, result.failures
    assert _query(home, "select count(*), count(distinct prompt_id) from stg_generations") == [(6, 2)]
    assert _query(home, "select setting from stg_runs") == [("generic",)]
    # every ready query runs against the built warehouse
    for q in sorted((Path(__file__).resolve().parents[2] / "sql").glob("*.sql")):
        _query(home, q.read_text())
    assert _query(home, (Path(__file__).resolve().parents[2] / "sql" / "generations_per_run.sql").read_text())[0][4] == 6
    # the CLI's read-only query answers
    proc = run_cli("sql", "select count(*) as n from stg_generations", home=home, check=True)
    assert "6" in proc.stdout


def test_data_tests_fail_on_orphan_rows(home: Path) -> None:
    """The relationship test must catch generations whose prompt is missing (the tests can fail). (A generation
    whose run is missing is not an orphan but uncommitted: stg_generations hides it, see the lake writer.)"""
    lake = Lake(home)
    lake.write("runs", "ghost", [{"run_id": "ghost", "model": "m", "setting": "generic"}])
    lake.write("generations", "orphans", [{
        "generation_id": make_key("ghost", "no-such-prompt", 0), "run_id": "ghost", "prompt_id": "no-such-prompt",
        "sample_idx": 0, "seed": None, "text": "boo", "n_tokens": None, "finish_reason": None}])
    result = build(home, progress=False)
    assert not result.success
    assert any("relationships_stg_generations_prompt_id" in f for f in result.failures), result.failures
    # a partial build runs only tests whose parents are all selected (DBT_INDIRECT_SELECTION=cautious)
    partial = build(home, select=["stg_generations"], progress=False)
    assert partial.success, partial.failures


def test_sql_before_build_is_a_clear_error(home: Path) -> None:
    proc = run_cli("sql", "select 1", home=home)
    assert proc.returncode == 2 and "run `lmaudit build` first" in proc.stderr
