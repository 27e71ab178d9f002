"""Exports for BI tools: Parquet/CSV read back by a fresh DuckDB and by SQLAlchemy (duckdb-engine)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import duckdb
import pytest

from ingest.build import build
from ingest.errors import UserError
from ingest.export import PUBLISHED, export
from ingest.importers.generations import import_generations
from ingest.lake import Lake

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    tmp_path = tmp_path_factory.mktemp("export")
    home = tmp_path / "warehouse"
    f = tmp_path / "g.jsonl"
    f.write_text("".join(json.dumps({"text": f"sample {i}"}) + "\n" for i in range(4)))
    import_generations(Lake(home), f, run_id="r", model="m", setting="unconditional")
    assert build(home, progress=False).success
    return home


def test_export_parquet_csv_and_published_copy(built: Path) -> None:
    res = export(built, "parquet")
    names = {p.stem for p in res.files}
    assert "fct_setting_metrics" in names
    con = duckdb.connect()
    for p in res.files:
        con.execute(f"select * from read_parquet('{p}')").fetchall()
    assert res.published is not None and res.published.name == PUBLISHED
    assert not os.access(res.published, os.W_OK) or os.geteuid() == 0
    import sqlalchemy as sa

    engine = sa.create_engine(f"duckdb:///{res.published}?access_mode=READ_ONLY")
    with engine.connect() as c:
        n = c.execute(sa.text("select count(*) from stg_generations")).scalar()
    assert n == 4
    csv = export(built, "csv", ["fct_setting_metrics"], publish=False)
    assert csv.files[0].read_text().splitlines()[0].startswith(("run_id", "metric")) or csv.files[0].read_text()
    assert not list(csv.files[0].parent.glob(".*.tmp"))


def test_export_errors(home: Path, built: Path) -> None:
    with pytest.raises(UserError, match="unknown model"):
        export(built, "parquet", ["fct_nope"])
    with pytest.raises(UserError, match="parquet or csv"):
        export(built, "xlsx")
    with pytest.raises(UserError, match="run `lmaudit build` first"):
        export(home, "parquet")  # a warehouse not built yet
    with pytest.raises(UserError, match="no warehouse at .*does not exist"):
        export(home.parent / "empty", "parquet")  # no warehouse at all (a mistyped --warehouse)
    assert not (home.parent / "empty").exists()


def test_report_is_self_contained(built: Path, tmp_path: Path) -> None:
    from ingest.report.build import build_report

    r = build_report(built, tmp_path / "report")
    page = r.html.read_text()
    assert page.startswith("<!doctype html>") and "Headline metrics" in page
    assert "src='data:image/png;base64," in page or not r.images
    assert all(p.exists() and p.stat().st_size > 1000 for p in r.images.values())
    assert "src='http" not in page and 'src="http' not in page
