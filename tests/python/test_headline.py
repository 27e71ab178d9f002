"""The demo's headline (ingest/report/headline.py + ingest/cli/headline_tables.py) on hand-built marts:
the readings, the coverage count and a 100-column terminal."""

from __future__ import annotations

import duckdb
import pytest
from rich.console import Console

import ingest.cli.headline_tables as ht
from ingest.report.headline import (
    PropensityHeadline,
    mixture_headline,
    propensity_headlines,
    setting_headlines,
)

SETTINGS = ("unconditional", "minimal_cue", "generic", "specific", "prefix")


@pytest.fixture()
def con():
    c = duckdb.connect()
    c.execute("""create table fct_setting_metrics (run_id varchar, setting varchar, metric varchar, value double,
                 ci_low double, ci_high double, null_reason varchar, n_generations integer,
                 upper_rule_of_three double, n_units_resampled integer, unit_kind varchar, n_excluded integer)""")
    for i, s in enumerate(SETTINGS):
        rid = f"sandbox-default-{s}"
        prompts = s in ("generic", "specific", "prefix")
        for metric, v in (("fmr", 0.281), ("fmr50", 0.0), ("als", 12.25), ("nvr", 0.5), ("r50", 0.1),
                          ("blank_rate", 0.42 if s == "generic" else 0.0)):
            upper = (3 / 40 if prompts else 3 / 1000) if metric == "fmr50" else None  # no event: 3 / n
            c.execute("insert into fct_setting_metrics values (?, ?, ?, ?, ?, ?, null, 1000, ?, ?, ?, ?)",
                      [rid, s, metric, v, v * 0.9, min(v * 1.1, 1.0 if metric != "als" else 99), upper,
                       40 if prompts else 1000, "prompt" if prompts else "generation", 7 if metric != "blank_rate"
                       else 0])
    c.execute("""create table fct_propensity (propensity_run_id varchar, propensity_setting varchar, metric varchar,
                 f_p double, f_c double, pm double, ci_low double, ci_high double, null_reason varchar,
                 pm_upper_rule_of_three double)""")
    c.executemany("insert into fct_propensity values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", [
        ("sandbox-default-generic", "generic", "fmr", 0.281, 0.238, 0.542, 0.45, 0.62, None, None),
        ("sandbox-default-generic", "generic", "r50", 0.01, 0.2, 0.048, 0.01, 0.09, None, None),
        ("sandbox-default-generic", "generic", "fmr50", 0.0, 0.0, 0.0, 0.0, 0.0, None, 1.0),
        ("sandbox-default-specific", "specific", "fmr50", 0.0, 0.02, 0.0, 0.0, 0.0, None, 0.075 / 0.095),
        ("sandbox-default-unconditional", "unconditional", "nvr", 0.9, 0.5, 0.643, 0.55, 0.7, None, None),
    ])
    c.execute("create table stg_runs (run_id varchar, model varchar)")
    c.execute("insert into stg_runs values ('sandbox-default-neutral', '/m')")
    c.execute("create table int_mixtures_documented (model varchar, domain varchar, weight double)")
    c.executemany("insert into int_mixtures_documented values ('/m', ?, ?)", [("code", 0.6), ("docs", 0.4)])
    c.execute("""create table fct_mixture_estimates (run_id varchar, estimator varchar, domain varchar,
                 estimate double, ci_low double, ci_high double)""")
    rows = []
    for est, code in (("direct", 0.55), ("pacc", 0.58), ("emq", 0.7), ("acc", 0.59)):
        lo_hi = (0.65, 0.75) if est == "emq" else (code - 0.05, code + 0.05)
        rows += [("sandbox-default-neutral", est, "code", code, *lo_hi),
                 ("sandbox-default-neutral", est, "docs", 1 - code, 1 - lo_hi[1], 1 - lo_hi[0])]
    c.executemany("insert into fct_mixture_estimates values (?, ?, ?, ?, ?, ?)", rows)
    c.execute("create table stg_trace_runs (trace_id varchar, started_at timestamp)")
    c.execute("create table fct_span_domains (run_id varchar, trace_id varchar, domain varchar, share double)")
    c.execute("create table fct_mixture_evaluation (run_id varchar, estimator varchar, overlap_accuracy double)")
    c.executemany("insert into fct_mixture_evaluation values ('sandbox-default-neutral', ?, ?)",
                  [("direct", 0.95), ("pacc", 0.98), ("emq", 0.9), ("acc", 0.99)])
    yield c
    c.close()


def test_readings_follow_the_interval() -> None:
    def reading(pm, lo, hi, fp=0.1, fc=0.2):
        return PropensityHeadline("r", "s", "fmr", fp, fc, pm, lo, hi, None).reading

    assert reading(0.2, 0.1, 0.4) == "below the attack"
    assert reading(0.54, 0.45, 0.62) == "not distinguishable"
    assert reading(0.7, 0.55, 0.8) == "above the attack"
    assert reading(0.0, 0.0, 0.0, fp=0.0, fc=0.0) == "no events in either"

    def no_event(upper):  # f_p = 0 of n units: the interval is [0, 0]; the reading follows PM at 3 / n
        return PropensityHeadline("r", "s", "fmr", 0.0, 0.31, 0.0, 0.0, 0.0, None, upper).reading

    assert no_event(0.19) == "below the attack"
    assert no_event(0.79) == "too few units to tell"  # 0 of 40 prompts against an attack rate of 2 %
    assert PropensityHeadline("r", "s", "fmr", None, None, None, None, None, "no prefix run").reading == "no prefix run"


def test_rows_keep_run_order_and_blank_share(con) -> None:
    runs = [f"sandbox-default-{s}" for s in SETTINGS]
    rows = setting_headlines(con, runs)
    assert [r.setting for r in rows] == list(SETTINGS)
    generic = rows[2]
    assert generic.blank_rate == pytest.approx(0.42) and generic.n_generations == 1000
    assert set(generic.metrics) == {"fmr", "fmr50", "als", "nvr", "r50"}
    pm = propensity_headlines(con, runs)
    assert [(r.setting, r.metric) for r in pm] == [("unconditional", "nvr"), ("generic", "fmr"),
                                                   ("generic", "fmr50"), ("generic", "r50"), ("specific", "fmr50")]
    assert (generic.n_units_resampled, generic.unit_kind, generic.n_excluded) == (40, "prompt", 7)
    assert generic.metrics["fmr50"].upper_rule_of_three == pytest.approx(0.075)


def test_mixture_coverage_counts_the_documented_share(con) -> None:
    m = mixture_headline(con, "sandbox-default-neutral")
    assert [r.domain for r in m.rows] == ["code", "docs"]
    # emq: code [0.65, 0.75] misses 0.6; docs [0.25, 0.35] misses 0.4
    assert m.n_covered == (0, 2)
    assert list(m.overlap_accuracy) == ["acc", "pacc", "direct", "emq"]  # best first


def test_the_headline_fits_100_columns(con, monkeypatch) -> None:
    out = Console(width=100, record=True, force_terminal=False)
    monkeypatch.setattr(ht, "console", out)
    runs = [f"sandbox-default-{s}" for s in SETTINGS]
    ht.print_settings(setting_headlines(con, runs))
    ht.print_propensity(propensity_headlines(con, runs))
    ht.print_mixture(mixture_headline(con, "sandbox-default-neutral"))
    text = out.export_text()
    assert max(len(line) for line in text.splitlines()) <= 100
    assert "-- row" not in text
    for needle in ("blank outputs %", "42", "not distinguishable", "below the attack", "overlap accuracy",
                   "covers the documented share in 0 of 2", "misses", "40 prompts", "1000 outputs",
                   "[0, ≤7.5]", "[0, ≤0.3]", "[0, ≤0.79]", "too few units to tell", "degenerate, left out"):
        assert needle in text, needle
    assert "[0, 0]" not in text.replace("[0, 0]).", "")  # only the footnote names the bootstrap's [0, 0]


def test_traced_span_domains_read_0_where_no_span_reached_them(con, monkeypatch) -> None:
    out = Console(width=100, record=True, force_terminal=False)
    monkeypatch.setattr(ht, "console", out)
    ht.print_mixture(mixture_headline(con, "sandbox-default-neutral"))  # not traced: '-' and said so
    assert "'-': the run is not traced" in out.export_text()
    con.execute("insert into stg_trace_runs values ('t1', now())")
    con.execute("insert into fct_span_domains values ('sandbox-default-neutral', 't1', 'code', 1.0)")
    out = Console(width=100, record=True, force_terminal=False)
    monkeypatch.setattr(ht, "console", out)
    ht.print_mixture(mixture_headline(con, "sandbox-default-neutral"))
    rows = {line.split()[0]: line.split()[-1] for line in out.export_text().splitlines()
            if line.startswith(("code ", "docs "))}
    assert rows == {"code": "100.0", "docs": "0.0"}


def test_printed_upper_bounds_are_rounded_up() -> None:
    """A printed "≤x" still bounds the value: rounded up at the last digit shown (3/9 of 100 reads 34)."""
    import random

    from ingest.cli.headline_tables import _num, _num_up

    assert _num_up(100 * 3 / 9) == "34" and _num(100 * 3 / 9) == "33"
    assert _num_up(0.3) == "0.3" and _num_up(100 * 3 / 40) == "7.5"  # exact values stay as they are
    rng = random.Random(0)
    for x in [rng.uniform(0, 1) * 10 ** rng.randint(-3, 2) for _ in range(2000)]:
        assert x <= float(_num_up(x)) <= 1.1 * x, x  # one step of the last digit shown is at most 10 %
