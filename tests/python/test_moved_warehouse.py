"""A warehouse copied (`cp -r`) or moved (`mv`) to another folder answers `lmaudit sql`, the explorer and
`lmaudit export` without a rebuild: the staging views, which dbt writes with the lake's absolute path, are
re-pointed at the new folder's lake for each read-only connection (ingest/warehouse_db.py).

Oracles: the lake is written by hand (tests/python/test_explore.py's), so the runs and generations the copy
must show are known; a run added only to the copy's lake proves the copy reads its own lake, not the
original's; where a view cannot be re-pointed the error is one line that says to run `lmaudit build`.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import run_cli
from ingest.lake import Lake


def _view_db(home: Path, lake_home: Path) -> None:
    """A database file with one view as dbt-duckdb writes a staging view: over `lake_home`'s lake."""
    import duckdb

    Lake(home).write("runs", "r", [{"run_id": "r1", "model": "m", "setting": "prefix"}])
    con = duckdb.connect(str(home / "lmaudit.duckdb"))
    con.execute(f"create view stg_runs as with source as (select * from read_parquet('{lake_home}/lake/runs/*.parquet', "
                "union_by_name = true)) select run_id, model from source")
    con.execute("create table fct_x as select 42 as answer")
    con.close()


def test_views_of_another_folder_are_repointed(tmp_path: Path) -> None:
    from ingest.warehouse_db import connect_read_only, stale_lake_message

    old, new = tmp_path / "old" / "warehouse", tmp_path / "new" / "warehouse"
    Lake(old).init()
    _view_db(old, old)
    shutil.copytree(old, new)
    shutil.rmtree(old)
    Lake(new).write("runs", "r2", [{"run_id": "r2", "model": "m", "setting": "prefix"}])  # only in the copy
    con = connect_read_only(new)
    try:
        assert sorted(con.execute("select run_id from stg_runs").fetchall()) == [("r1",), ("r2",)]
        assert con.execute("select run_id from main.stg_runs order by 1").fetchall() == [("r1",), ("r2",)]
        assert con.execute("select answer from fct_x").fetchone() == (42,)
    finally:
        con.close()
    msg = stale_lake_message(f'Permission Error: Cannot access file "{old}/lake/runs/*.parquet" - file system '
                             "operations are disabled by configuration", new)
    assert msg is not None and "lmaudit build" in msg and str(old) in msg
    assert stale_lake_message(f'Cannot access file "{new}/lake/runs/*.parquet"', new) is None  # not moved
    assert stale_lake_message('Cannot access file "/etc/passwd"', new) is None


def test_sql_in_a_copied_warehouse(tmp_path: Path) -> None:
    old, new = tmp_path / "old" / "warehouse", tmp_path / "new" / "warehouse"
    Lake(old).init()
    _view_db(old, old)
    shutil.copytree(old, new)
    old.rename(old.parent / "renamed")
    p = run_cli("sql", "--csv", "select run_id from stg_runs", home=new)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["run_id", "r1"]
    # the stored view itself, named with its database, still reads the old folder: one line with the fix
    p = run_cli("sql", "select run_id from lmaudit.main.stg_runs", home=new)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "moved or copied" in p.stderr
    assert "lmaudit build" in p.stderr and "Traceback" not in p.stderr


@pytest.mark.slow
def test_copied_built_warehouse_answers_sql_and_explore(tmp_path: Path) -> None:
    from test_explore import write_lake

    from ingest.build import build
    from ingest.explore.queries import Explorer, GenQuery

    old = tmp_path / "a" / "warehouse"
    write_lake(old)
    res = build(old, select=["+fct_setting_metrics", "stg_corpora", "stg_span_counts"],
                vars_="{propme_bootstrap_resamples: 20}", progress=False)
    assert res.success, res.failures
    new = tmp_path / "b" / "warehouse"
    shutil.copytree(old, new)
    old.rename(old.parent / "gone")  # the views' folder no longer exists
    p = run_cli("sql", "--csv", "select run_id from stg_runs order by 1", home=new)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["run_id", "r_pre", "r_unc"]
    ex = Explorer(new)
    try:
        assert [r["run_id"] for r in ex.runs()] == ["r_pre", "r_unc"]
        page = ex.generations(GenQuery(sort="longest_span", size=10))
        assert page.total == 4 and page.rows[0]["generation_id"] == "g2"
        g = ex.generation("g1")
        assert g is not None and {s["span_id"] for s in g["spans"]} == {"s_a", "s_b"}
        assert [d["doc_id"] for d in ex.span_documents("s_a")["documents"]] == ["story-1", "story-2"]
    finally:
        ex.close()
    p = run_cli("explore", "--out", str(tmp_path / "site"), home=new)
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "site" / "index.html").exists()
    p = run_cli("export", "--format", "csv", "-m", "stg_runs", "--no-publish", home=new)
    assert p.returncode == 0, p.stderr
    assert "r_pre" in (new / "exports" / "stg_runs.csv").read_text()
