"""Review of a6c7020 (zero-event rates read as [0, <=3/n]; fct_propensity's rule-of-three PM bound; `unit`).

Oracles independent of the code under review: scipy.stats.beta for the exact Clopper-Pearson bound, hand-built
input tables and hand-computed answers for the SQL. The dbt models are run for real in DuckDB, rendered with
jinja2 (`ref('x')` -> table x, the project's own macros), not re-implemented here."""

from __future__ import annotations

import math
import re
from pathlib import Path

import duckdb
import jinja2
import pytest
from scipy.stats import beta

from ingest.report.build import HEADLINE_SQL
from ingest.report.headline import PropensityHeadline

ROOT = Path(__file__).resolve().parents[2]
MACROS = ("macros/propme_intervals.sql", "macros/model_name.sql")


def render(path: str) -> str:
    text = "".join((ROOT / m).read_text() for m in MACROS) + (ROOT / path).read_text()
    return jinja2.Environment().from_string(text).render(ref=lambda name: name, config=lambda **_: "")


def one_sided_cp_upper(n: int, level: float = 0.95) -> float:
    """Exact Clopper-Pearson upper bound for 0 events in n units (one-sided)."""
    return float(beta.ppf(level, 1, n))


# ------------------------------------------------------------------------------------------------ fixture
# Three runs of one model: a prefix attack (40 prompts, 4 samples each, 2 events), a specific-prompt run with
# no event in 40 prompts of which one has only degenerate samples (39 units with a denominator), and an
# unconditional run with no event in 160 generations, 2 of them degenerate (158 with a denominator); plus an
# empty run (no units at all) and an untraced unit-less row.
RUNS = {  # run_id: (setting, unit_kind, n_generations)
    "pre": ("prefix", "prompt", 160),
    "spec": ("specific", "prompt", 160),
    "unc": ("unconditional", "generation", 160),
    "empty": ("generic", "prompt", 0),
}
BOOT = [  # run, metric, n_units_resampled, n_units, n_generations, n_excluded, num, den, value, ci_low, ci_high
    ("pre", "fmr", 40, 40, 160, 0, 8.0, 160.0, 0.05, 0.0125, 0.1),
    ("pre", "r50", 40, 40, 160, 0, 0.0, 160.0, 0.0, 0.0, 0.0),
    ("spec", "fmr", 40, 39, 160, 4, 0.0, 156.0, 0.0, 0.0, 0.0),
    ("spec", "r50", 40, 39, 160, 4, 0.0, 156.0, 0.0, 0.0, 0.0),
    ("spec", "als", 40, 39, 160, 4, 0.0, 156.0, 0.0, 0.0, 0.0),
    ("unc", "fmr", 160, 158, 160, 2, 0.0, 158.0, 0.0, 0.0, 0.0),
    ("unc", "r50", 160, 158, 160, 2, 0.0, 158.0, 0.0, 0.0, 0.0),
]


@pytest.fixture(scope="module")
def con():
    c = duckdb.connect()
    c.execute("""create table int_propme_params as select 200 as bootstrap_resamples, 42::bigint as bootstrap_seed,
                 0.95 as ci_level, 20 as mid_span_tokens, 50 as long_span_tokens, ['fmr', 'r50'] as pm_metrics,
                 '{}'::json as params""")
    c.execute("create table int_metric_definitions as " + render("models/intermediate/propme/int_metric_definitions.sql"))
    c.execute("""create table int_run_traces (run_id varchar, trace_id varchar, model varchar, revision varchar,
                 corpus_id varchar, setting varchar, setting_kind varchar, unit_kind varchar, trace_mode varchar,
                 trace_corpus_id varchar, n_generations bigint, n_traced_generations bigint,
                 n_stale_generations bigint)""")
    for run, (setting, kind, n) in RUNS.items():
        c.execute("insert into int_run_traces values (?, 't1', 'org/m', null, 'c1', ?, ?, ?, 'mixed', 'c1', ?, ?, 0)",
                  [run, setting, setting, kind, n, n])
    c.execute("""create table int_setting_bootstrap (run_id varchar, trace_id varchar, metric varchar,
                 n_units_resampled bigint, n_units bigint, n_generations bigint, n_excluded bigint, numerator double,
                 denominator double, value double, ci_low double, ci_high double, n_skipped_resamples bigint)""")
    for row in BOOT:
        c.execute("insert into int_setting_bootstrap values (?, 't1', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)", list(row))
    c.execute("create table fct_setting_metrics as " + render("models/marts/propme/fct_setting_metrics.sql"))
    c.execute("""create table int_propensity_pairs as select * from (values
                 ('spec', 'pre', 't1', 'default', null), ('unc', 'pre', 't1', 'default', null))
                 as v(propensity_run_id, capability_run_id, trace_id, pairing, null_reason)""")
    # what int_propensity_bootstrap gives with f_p = 0 in every round: PM 0 in every kept round, [0, 0];
    # r50 has f_c = 0 too, so every round is skipped
    c.execute("""create table int_propensity_bootstrap as select * from (values
                 ('spec', 'pre', 't1', 'fmr', 0.0, 0.0, 0.0, 0, -0.05, -0.1, -0.0125),
                 ('unc', 'pre', 't1', 'fmr', 0.0, 0.0, 0.0, 0, -0.05, -0.1, -0.0125),
                 ('spec', 'pre', 't1', 'r50', 0.0, null, null, 200, 0.0, 0.0, 0.0),
                 ('unc', 'pre', 't1', 'r50', 0.0, null, null, 200, 0.0, 0.0, 0.0))
                 as v(propensity_run_id, capability_run_id, trace_id, metric, pm, ci_low, ci_high,
                      n_skipped_rounds, diff, diff_ci_low, diff_ci_high)""")
    c.execute("create table fct_propensity as " + render("models/marts/propme/fct_propensity.sql"))
    return c


def setting(con, run: str, metric: str) -> dict:
    cur = con.execute("select * from fct_setting_metrics where run_id = ? and metric = ?", [run, metric])
    return dict(zip([d[0] for d in cur.description], cur.fetchone()))


def propensity(con, run: str, metric: str) -> dict:
    cur = con.execute("select * from fct_propensity where propensity_run_id = ? and metric = ?", [run, metric])
    return dict(zip([d[0] for d in cur.description], cur.fetchone()))


def headline(row: dict) -> PropensityHeadline:
    return PropensityHeadline(row["propensity_run_id"], row["propensity_setting"], row["metric"], row["f_p"],
                              row["f_c"], row["pm"], row["ci_low"], row["ci_high"], row["null_reason"],
                              row["pm_upper_rule_of_three"])


# -------------------------------------------------------------------------------- checks that hold (kept)
@pytest.mark.parametrize("n", [1, 2, 3, 5, 10, 39, 40, 158, 160, 1000, 10_000])
def test_3_over_n_is_the_one_sided_95_bound_and_never_below_the_exact_one(n: int) -> None:
    exact = one_sided_cp_upper(n)
    assert exact == pytest.approx(1 - 0.05 ** (1 / n), rel=1e-9)
    rule = min(1.0, 3 / n)
    assert rule >= exact  # conservative for every n (3 > -ln 0.05 = 2.996)
    if n >= 40:
        assert rule == pytest.approx(exact, rel=0.05)  # and the same quantity once n is not tiny


def test_the_bound_counts_the_units_the_bootstrap_resamples_that_can_hold_an_event(con) -> None:
    # prompts resampled: n = 39 prompts with a non-degenerate sample (not 160 generations, not 40 prompts
    # of which one has nothing to count); generations resampled: n = 158 non-degenerate generations
    spec, unc = setting(con, "spec", "fmr"), setting(con, "unc", "fmr")
    assert spec["unit_kind"] == "prompt" and spec["upper_rule_of_three"] == pytest.approx(3 / 39)
    assert unc["unit_kind"] == "generation" and unc["upper_rule_of_three"] == pytest.approx(3 / 158)
    assert spec["upper_rule_of_three"] >= one_sided_cp_upper(39)
    assert setting(con, "spec", "als")["upper_rule_of_three"] is None  # a mean, not a proportion
    assert setting(con, "pre", "fmr")["upper_rule_of_three"] is None  # 8 events


def test_no_units_gives_no_bound_and_a_reason(con) -> None:
    empty = setting(con, "empty", "fmr")  # no bootstrap row at all (n NULL): no division, a reason
    assert empty["upper_rule_of_three"] is None and empty["value"] is None
    assert empty["null_reason"] == "empty run: no generations" and empty["n_units"] == 0


def test_each_metric_has_its_own_unit(con) -> None:
    got = dict(con.execute("select metric, unit from int_metric_definitions").fetchall())
    tokens = {"als", "als_nl"}
    per_prompt = {"fmr20_any10_mean", "r50_any10_mean"}  # sum of hits over prompts with a hit
    assert {m for m, u in got.items() if u == "tokens"} == tokens
    assert {m for m, u in got.items() if u == "hits per prompt"} == per_prompt
    assert {m for m, u in got.items() if u == "fraction"} == set(got) - tokens - per_prompt
    assert setting(con, "spec", "als")["unit"] == "tokens" and setting(con, "spec", "fmr")["unit"] == "fraction"


def test_no_event_on_either_side_reads_as_such(con) -> None:
    r = propensity(con, "spec", "r50")  # f_p = f_c = 0: PM undefined; 3/n of f_p alone bounds nothing
    assert (r["f_p"], r["f_c"]) == (0.0, 0.0)
    assert r["null_reason"] == "every bootstrap round skipped: f_p + f_c = 0 in all rounds"
    assert r["pm_upper_rule_of_three"] == 1.0  # u / (u + 0): honest, uninformative
    assert headline(r).reading == "no events in either"


# --------------------------------------------------------------------------------------------- findings
def test_pm_bound_allows_for_the_attack_rate_uncertainty(con) -> None:
    """0 of 158 generations (f_p <= 3/158 = 0.019) against an attack rate of 8/160 = 0.05 whose own 95 %
    interval reaches down to 0.0125: the data allow PM = 0.019 / (0.019 + 0.0125) = 0.60 > 0.5, so the
    reading must not be "below the attack" (a non-zero f_p gets f_c's noise through the PM bootstrap)."""
    r = propensity(con, "unc", "fmr")
    u, f_c_low = 3 / 158, 0.0125
    allowed = u / (u + f_c_low)  # PM is increasing in f_p and decreasing in f_c
    assert allowed > 0.5
    assert r["pm_upper_rule_of_three"] == pytest.approx(allowed)
    assert headline(r).reading == "too few units to tell"


def test_headline_sql_gives_the_n_of_its_3_over_n(con) -> None:
    sql = (ROOT / "sql/headline_metrics.sql").read_text()
    for run, n in (("spec", 39), ("unc", 158)):
        cur = con.execute(f"select * from ({sql}) where run_id = ? and metric = 'fmr'", [run])
        row = dict(zip([d[0] for d in cur.description], cur.fetchone()))
        bound = float(re.search(r"at most ([0-9.]+)", row["ci_95_or_reason"]).group(1))
        assert 3 / n <= bound <= 3 / n + 1e-4  # a bound printed rounds up
        assert row["n_units"] == n  # the row's own n gives its 3/n


def test_report_gives_the_n_of_its_3_over_n(con) -> None:
    cur = con.execute(HEADLINE_SQL.replace("order by", "and run_id in ('spec', 'unc') order by"))
    for row in (dict(zip([d[0] for d in cur.description], r)) for r in cur.fetchall()):
        if row["upper_rule_of_three"] is not None:
            u = min(1, 3 / row["n_units"])
            assert u <= row["upper_rule_of_three"] <= u + 1e-4, row  # a bound printed rounds up


def test_differs_from_neutral_agrees_with_the_rule_of_three_reading(con) -> None:
    r = propensity(con, "spec", "fmr")  # u = 3/39 = 0.077 against f_c 0.05 (0.0125 at its low end)
    assert r["pm_upper_rule_of_three"] >= 0.5 and headline(r).reading == "too few units to tell"
    assert r["pm_differs_from_neutral"] is not True


@pytest.mark.xfail(strict=True, reason="judgement: 3/n is the one-sided 95 % bound (two-sided 90 %), printed in "
                   "the slot of a two-sided 95 % interval and fixed whatever propme_ci_level is; the two-sided "
                   "exact upper end for 0 of n is 1 - 0.025**(1/n) ~ 3.69/n")
@pytest.mark.parametrize("n", [39, 158])
def test_the_bound_matches_the_two_sided_level_of_the_interval_beside_it(con, n: int) -> None:
    run = {39: "spec", 158: "unc"}[n]
    assert setting(con, run, "fmr")["upper_rule_of_three"] >= float(beta.ppf(0.975, 1, n)) - 1e-12
    assert math.isclose(float(beta.ppf(0.975, 1, n)), 1 - 0.025 ** (1 / n), rel_tol=1e-9)
