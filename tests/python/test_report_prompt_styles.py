"""The report's Table 5 (prompt styles x models, overlap accuracy of one estimator) on a hand-built
fct_mixture_prompt_styles in an in-memory DuckDB: the cells are the mart's numbers (mean over a style's runs)."""

from __future__ import annotations

import duckdb

from ingest.report.tables import table5, table5_html


def _con():
    con = duckdb.connect()
    con.execute("""create table fct_mixture_prompt_styles as select * from (values
        ('/w/a/model', 'coding', 'pacc', 0.40),
        ('/w/a/model', 'neutral', 'pacc', 0.80),
        ('/w/a/model', 'neutral', 'pacc', 0.90),
        ('/w/a/model', 'neutral', 'direct', 0.10),
        ('/w/b/model', 'instructional', 'pacc', 0.70),
        ('/w/b/model', 'unconditional', 'pacc', null)
    ) as t(model, style, estimator, overlap_accuracy)""")
    return con


def test_table5_rows_are_styles_in_the_papers_order_and_columns_models() -> None:
    models, rows = table5(_con())
    assert models == ["a", "b"]
    assert [s for s, _ in rows] == ["instructional", "coding", "neutral", "unconditional"]
    got = dict(rows)
    assert got["neutral"]["a"] == 85.0 and got["coding"] == {"a": 40.0} and got["unconditional"] == {"b": None}
    page = table5_html(_con())
    assert "Table 5" in page and "<td>85.0</td>" in page and "<th>b</th>" in page


def test_table5_without_the_mart_is_a_note() -> None:
    assert "not available" in table5_html(duckdb.connect())
