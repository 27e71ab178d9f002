"""The report's Table 2 (models x estimators, overlap accuracy) and trajectory figure on hand-built marts in an
in-memory DuckDB: the cells are the marts' numbers, model-level estimators join every run of their model."""

from __future__ import annotations

import duckdb

from ingest.report.tables import short_model, table2, table2_html
from ingest.report.trajectory import trajectory_figure


def _con():
    con = duckdb.connect()
    con.execute("create table stg_runs as select * from (values ('r1', 'unconditional', 1.0), "
                "('r2', 'neutral', 0.8)) as t(run_id, setting, temperature)")
    con.execute("""create table fct_mixture_evaluation as select * from (values
        ('/w/box/model', 'm', 'r1', 'tfidf', 'pacc', 0.95),
        ('/w/box/model', 'm', 'r1', 'tfidf', 'direct', 0.90),
        ('/w/box/model', 'm', 'r2', 'tfidf', 'pacc', 0.80),
        ('/w/box/model', 'm', null, null, 'mia_loss', 0.60),
        ('/w/solo', 'solo', null, null, 'bpe_merges', 0.70)
    ) as t(run_model, documented_model, run_id, classifier_name, estimator, overlap_accuracy)""")
    return con


def test_table2_rows_are_runs_with_their_models_model_level_estimators() -> None:
    rows = dict(table2(_con()))
    assert rows == {
        "box (m) | r1, unconditional T=1, tfidf": {"pacc": 95.0, "direct": 90.0, "mia_loss": 60.0},
        "box (m) | r2, neutral T=0.8, tfidf": {"pacc": 80.0, "mia_loss": 60.0},
        "solo (solo)": {"bpe_merges": 70.0},
    }
    page = table2_html(_con())
    assert page.index("<th>direct</th>") < page.index("<th>pacc</th>") < page.index("<th>mia_loss</th>")
    assert "<td>95.0</td>" in page


def test_table2_without_the_marts_is_a_note() -> None:
    assert "not available" in table2_html(duckdb.connect())


def test_trajectory_figure_draws_from_the_trajectory_marts(tmp_path) -> None:
    con = duckdb.connect()
    con.execute("""create table fct_mixture_trajectory as select * from (values
        ('/w/box/model', 200, 'pacc', 'a', 0.4, 0.3, 0.5, 0.7, 0.7),
        ('/w/box/model', 200, 'pacc', 'b', 0.6, 0.5, 0.7, 0.3, 0.7),
        ('/w/box/model', 400, 'pacc', 'a', 0.65, 0.6, 0.7, 0.7, 0.95),
        ('/w/box/model', 400, 'pacc', 'b', 0.35, 0.3, 0.4, 0.3, 0.95),
        ('/w/box/model', 400, 'mia_loss', 'a', 0.5, null, null, 0.7, 0.8)
    ) as t(base_model, step, estimator, domain, estimate, ci_low, ci_high, truth, overlap_accuracy)""")
    con.execute("""create table fct_propme_trajectory as select * from (values
        ('/w/box/model', 200, 'r50', 0.0, 0.0, 0.01), ('/w/box/model', 400, 'r50', 0.05, 0.02, 0.08)
    ) as t(base_model, step, metric, value, ci_low, ci_high)""")
    png = tmp_path / "t.png"
    assert trajectory_figure(con, png) and png.read_bytes()[:4] == b"\x89PNG"
    con.execute("delete from fct_mixture_trajectory; delete from fct_propme_trajectory")
    assert not trajectory_figure(con, tmp_path / "none.png")


def test_short_model_names() -> None:
    assert short_model("/w/sandbox/tiny-seed0/model") == "tiny-seed0"
    assert short_model("/w/sandbox/tiny-seed0/model/checkpoints/step-000200") == "tiny-seed0@step200"
    assert short_model("EleutherAI/pythia-1b") == "pythia-1b" and short_model("m") == "m"
