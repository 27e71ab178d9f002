"""The numbers a reader sees first (`lmaudit demo`), as typed rows read from the marts.

Each headline is shaped so that it cannot be misread:
- PropMe metrics per setting come with their blank-output share beside them: an empty or whitespace-only output
  reproduces nothing (it never matches, as in PropMe's released code) but stays in every denominator. Beside
  them, what the interval resamples (prompts with their samples, or single generations) and how many
  degenerate outputs the metrics leave out, so "160 generations" is never read as the interval's n.
- A rate with no event has the bootstrap's [0, 0] interval (as the paper reports it); its rule-of-three upper
  bound 3 / n comes with it, so 0 of 40 prompts is read as "at most 7.5 %", not as "none".
- A propensity score comes with the two rates it compares and a reading in words against its interval, so
  0.54 is never read as "as much as the attack" when the interval also admits 0.3. With no event in the
  setting the reading uses the PM that f_p's rule-of-three bound gives, not the [0, 0] interval.
- A mixture estimate comes with its overlap accuracy against the documented mixture and with whether each
  interval covers the documented share: intervals measure sampling noise, not the model's own bias.
Rendering (terminal tables) is the CLI's job; this module only reads.
"""

from __future__ import annotations

from dataclasses import dataclass

HEADLINE_METRICS = ("fmr", "fmr50", "als", "nvr", "r50")
PROPENSITY_METRICS = ("fmr", "fmr50", "nvr", "r50")
MIXTURE_ESTIMATORS = ("direct", "pacc", "emq")  # the table's columns; every estimator gets an overlap accuracy
INTERVAL_ESTIMATOR = "emq"


@dataclass(frozen=True)
class Interval:
    value: float | None
    low: float | None
    high: float | None
    reason: str | None = None  # why the value is NULL
    upper_rule_of_three: float | None = None  # no event: 3 / n, beside the bootstrap's [0, 0]


@dataclass(frozen=True)
class SettingHeadline:
    run_id: str
    setting: str
    n_generations: int | None
    blank_rate: float | None
    metrics: dict[str, Interval]
    n_units_resampled: int | None = None  # what the bootstrap resamples: prompts or generations (unit_kind)
    unit_kind: str | None = None
    n_excluded: int | None = None  # degenerate outputs the headline metrics leave out


@dataclass(frozen=True)
class PropensityHeadline:
    run_id: str
    setting: str
    metric: str
    f_p: float | None
    f_c: float | None
    pm: float | None
    low: float | None
    high: float | None
    reason: str | None
    pm_upper_rule_of_three: float | None = None  # no event in the setting: PM at f_p's rule-of-three bound

    @property
    def reading(self) -> str:
        """The score in words, from its interval: PM = 0.5 is as much as the prefix attack. With no event in
        the setting the interval is [0, 0]; what the sample still allows is the rule-of-three bound's PM."""
        if self.pm is None:
            return self.reason or "not computed"
        if not self.f_p and not self.f_c:
            return "no events in either"
        if self.pm_upper_rule_of_three is not None:
            return "below the attack" if self.pm_upper_rule_of_three < 0.5 else "too few units to tell"
        if self.low is None or self.high is None:
            return "no interval"
        if self.high < 0.5:
            return "below the attack"
        if self.low > 0.5:
            return "above the attack"
        return "not distinguishable"


@dataclass(frozen=True)
class MixtureRow:
    domain: str
    documented: float | None
    estimates: dict[str, float | None]
    low: float | None  # interval of INTERVAL_ESTIMATOR
    high: float | None
    traced_spans: float | None

    @property
    def covered(self) -> bool | None:
        if self.documented is None or self.low is None or self.high is None:
            return None
        return self.low - 1e-9 <= self.documented <= self.high + 1e-9


@dataclass(frozen=True)
class MixtureHeadline:
    run_id: str
    rows: list[MixtureRow]
    overlap_accuracy: dict[str, float]  # estimator -> overlap accuracy in [0, 1]

    @property
    def n_covered(self) -> tuple[int, int]:
        known = [r.covered for r in self.rows if r.covered is not None]
        return sum(known), len(known)


def _in(values) -> str:
    return "(" + ", ".join("?" for _ in values) + ")"


def setting_headlines(con, run_ids: list[str]) -> list[SettingHeadline]:
    """One row per PropMe run among `run_ids`, in the given order (runs without metrics are left out)."""
    if not run_ids:
        return []
    metrics = (*HEADLINE_METRICS, "blank_rate")
    rows = con.execute(
        f"select run_id, setting, metric, value, ci_low, ci_high, null_reason, n_generations, upper_rule_of_three, "
        f"n_units_resampled, unit_kind, n_excluded "
        f"from fct_setting_metrics where run_id in {_in(run_ids)} and metric in {_in(metrics)}",
        [*run_ids, *metrics]).fetchall()
    by_run: dict[str, dict] = {}
    for run_id, setting, metric, value, low, high, reason, n_gen, upper, n_resampled, unit_kind, excluded in rows:
        r = by_run.setdefault(run_id, {"setting": setting, "n": n_gen, "m": {}, "units": None, "kind": unit_kind,
                                       "excluded": None})
        r["m"][metric] = Interval(value, low, high, reason, upper)
        r["n"] = r["n"] if r["n"] is not None else n_gen
        if metric == "fmr":  # the headline metrics resample the same units and leave out the same outputs
            r["units"], r["excluded"] = n_resampled, excluded
    out = []
    for run_id in run_ids:
        if run_id in by_run:
            r = by_run[run_id]
            blank = r["m"].pop("blank_rate", None)
            out.append(SettingHeadline(run_id, r["setting"], r["n"], None if blank is None else blank.value, r["m"],
                                       r["units"], r["kind"], r["excluded"]))
    return out


def propensity_headlines(con, run_ids: list[str]) -> list[PropensityHeadline]:
    """PM of each propensity run among `run_ids` against its prefix attack, for the headline metrics."""
    if not run_ids:
        return []
    rows = con.execute(
        f"select propensity_run_id, propensity_setting, metric, f_p, f_c, pm, ci_low, ci_high, null_reason, "
        f"pm_upper_rule_of_three "
        f"from fct_propensity where propensity_run_id in {_in(run_ids)} and metric in {_in(PROPENSITY_METRICS)}",
        [*run_ids, *PROPENSITY_METRICS]).fetchall()
    order = {r: i for i, r in enumerate(run_ids)}
    rows.sort(key=lambda r: (order[r[0]], PROPENSITY_METRICS.index(r[2])))
    return [PropensityHeadline(*r) for r in rows]


def mixture_headline(con, run_id: str) -> MixtureHeadline:
    """The run's estimate per domain (MIXTURE_ESTIMATORS), the documented share, the traced spans' domains and
    every estimator's overlap accuracy against the documented mixture."""
    est = con.execute(
        "select e.domain, e.estimator, e.estimate, e.ci_low, e.ci_high, d.weight "
        "from fct_mixture_estimates e join stg_runs r on e.run_id = r.run_id "
        "left join int_mixtures_documented d on r.model = d.model and lower(e.domain) = lower(d.domain) "
        "where e.run_id = ?", [run_id]).fetchall()
    spans = dict(con.execute(
        "select s.domain, s.share from fct_span_domains s join stg_trace_runs t on s.trace_id = t.trace_id "
        "where s.run_id = ? qualify t.started_at = max(t.started_at) over ()", [run_id]).fetchall())
    by_domain: dict[str, dict] = {}
    for domain, estimator, estimate, low, high, weight in est:
        d = by_domain.setdefault(domain, {"doc": weight, "est": {}, "low": None, "high": None})
        d["est"][estimator] = estimate
        if estimator == INTERVAL_ESTIMATOR:
            d["low"], d["high"] = low, high
    rows = [MixtureRow(domain, d["doc"], {e: d["est"].get(e) for e in MIXTURE_ESTIMATORS}, d["low"], d["high"],
                       spans.get(domain)) for domain, d in sorted(by_domain.items())]
    oa = dict(con.execute(
        "select estimator, overlap_accuracy from fct_mixture_evaluation "
        "where run_id = ? and overlap_accuracy is not null order by overlap_accuracy desc, estimator",
        [run_id]).fetchall())
    return MixtureHeadline(run_id, rows, oa)
