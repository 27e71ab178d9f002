"""Terminal tables of the demo's headline (ingest/report/headline.py reads them), narrow enough for 100 columns:
settings as columns with each interval under its value, one propensity row per (setting, metric) with the two
rates it compares, the mixture per domain with its coverage and every estimator's overlap accuracy."""

from __future__ import annotations

import math

from rich import box
from rich.table import Table
from rich.text import Text

from ingest.cli.context import console
from ingest.report.headline import (
    INTERVAL_ESTIMATOR,
    MIXTURE_ESTIMATORS,
    Interval,
    MixtureHeadline,
    PropensityHeadline,
    SettingHeadline,
)

LABELS = {"fmr": ("FMR", "%"), "fmr50": ("FMR50", "%"), "als": ("ALS", "tokens"), "nvr": ("NVR", "%"),
          "r50": ("R50", "%")}
PERCENT = {"fmr", "fmr50", "nvr", "r50"}


def _num(x: float) -> str:
    """Short numbers: 0.25, 2.5, 25, 100 (three significant digits at most, no trailing zeros)."""
    if x == 0:
        return "0"
    if abs(x) >= 10:
        return f"{x:.0f}"
    return f"{x:.2g}" if abs(x) < 1 else f"{x:.1f}".rstrip("0").rstrip(".")


def _num_up(x: float) -> str:
    """An upper bound as `_num` prints it, rounded up at the last digit shown, so that the printed figure still
    bounds it (3/9 of 100 is "34", not "33")."""
    if x <= 0:
        return _num(x)
    decimals = 0 if x >= 10 else 1 if x >= 1 else 1 - math.floor(math.log10(x))
    return _num(math.ceil(round(x * 10 ** decimals, 9)) / 10 ** decimals)  # round: 0.3 * 100 is 30.000000000000004


def _cell(iv: Interval | None, scale: float) -> Text:
    if iv is None:
        return Text("-")
    if iv.value is None:
        return Text(iv.reason or "NULL", style="dim")
    head = _num(scale * iv.value)
    if iv.upper_rule_of_three is not None:  # no event: the bootstrap's [0, 0] says nothing about how few
        return Text(f"{head}\n[0, ≤{_num_up(scale * iv.upper_rule_of_three)}]")
    if iv.low is None or iv.high is None:
        return Text(head)
    return Text(f"{head}\n[{_num(scale * iv.low)}, {_num(scale * iv.high)}]")


def _units(r: SettingHeadline) -> str:
    """What the interval resamples: a prompt with all its samples, or one generation."""
    if r.n_units_resampled is None:
        return "-"
    return f"{r.n_units_resampled} {'prompts' if r.unit_kind == 'prompt' else 'outputs'}"


def _table(*cols: str, title: str) -> Table:
    t = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    for c in cols:  # a one-word header (a setting's name) is never folded mid-word in a narrow terminal
        t.add_column(c, overflow="fold", min_width=len(c) if c and " " not in c else None)
    return t


def print_settings(rows: list[SettingHeadline]) -> None:
    """Settings as columns, metrics as rows: five settings fit 100 columns with their intervals."""
    if not rows:
        return
    t = _table("", *(r.setting for r in rows),
               title="What each setting reproduces (value, then its 95% bootstrap interval)")
    t.add_row("generations", *(str(r.n_generations) for r in rows))
    t.add_row("resampled units", *(_units(r) for r in rows))
    t.add_row("degenerate, left out", *("-" if r.n_excluded is None else str(r.n_excluded) for r in rows))
    t.add_row("blank outputs %", *("-" if r.blank_rate is None else _num(100 * r.blank_rate) for r in rows),
              end_section=True)
    for metric, (name, unit) in LABELS.items():
        scale = 100.0 if metric in PERCENT else 1.0
        t.add_row(f"{name} {unit}", *(_cell(r.metrics.get(metric), scale) for r in rows))
    console.print(t)
    console.print("  FMR: whole output found in a training document; FMR50: of >= 50 tokens; ALS: mean longest span; "
                  "NVR: mean near-verbatim recall; R50: longest span >= 50 tokens. Intervals resample the resampled "
                  "units (a prompt's samples stay together): their n is that, not the generations. The metrics "
                  "leave out degenerate outputs (repetitive or non-text); blank outputs "
                  "(empty or whitespace-only) reproduce nothing: they never count as a match but stay in every "
                  "share. [0, ≤x]: no event; x is the rule-of-three 95% upper bound 3/n, n the resampled units with an "
                  "output counted (the bootstrap of zero events is [0, 0]).", style="dim")


def print_propensity(rows: list[PropensityHeadline]) -> None:
    if not rows:
        return
    t = _table("setting", "metric", "this setting", "prefix attack", "PM", "95% interval", "reading",
               title="Propensity PM = f_p / (f_p + f_c): 0.5 = as much as the prefix attack, 0 = none of it")
    last = None
    for r in rows:
        scale, unit = (100.0, "%") if r.metric in PERCENT else (1.0, "")
        rate = (lambda v: "-" if v is None else _num(scale * v) + unit)
        if r.pm_upper_rule_of_three is not None:  # no event in this setting: [0, 0], and what n still allows
            interval = f"[0, ≤{math.ceil(round(100 * r.pm_upper_rule_of_three, 9)) / 100:.2f}]"  # rounded up
        else:
            interval = "-" if r.low is None else f"[{r.low:.2f}, {r.high:.2f}]"
        pm = "-" if r.pm is None else f"{r.pm:.2f}"
        t.add_row(r.setting if r.setting != last else "", LABELS[r.metric][0], rate(r.f_p), rate(r.f_c), pm,
                  interval, r.reading)
        last = r.setting
    console.print(t)
    if any(r.pm_upper_rule_of_three is not None for r in rows):
        console.print("  [0, ≤x]: no event in this setting; x is the PM of f_p at its rule-of-three bound 3/n "
                      "(f_c at its interval's low end), and the reading follows x.", style="dim")


def print_mixture(m: MixtureHeadline) -> None:
    if not m.rows:
        return
    cols = ("domain", "documented %", *(f"{e} %" for e in MIXTURE_ESTIMATORS), f"{INTERVAL_ESTIMATOR} 95% interval",
            "traced spans %")
    t = _table(*cols, title=f"Training mixture from the generations of {m.run_id} (shares in %)")
    pct = (lambda v: "-" if v is None else f"{100 * v:.1f}")
    traced = any(r.traced_spans is not None for r in m.rows)  # a domain no long span reached: 0, not unknown
    for r in m.rows:
        if r.low is None:
            interval = Text("-")
        else:
            mark = {True: " covers", False: " misses", None: ""}[r.covered]
            interval = Text(f"[{100 * r.low:.1f}, {100 * r.high:.1f}]{mark}",
                            style="red" if r.covered is False else "")
        t.add_row(r.domain, pct(r.documented), *(pct(r.estimates.get(e)) for e in MIXTURE_ESTIMATORS), interval,
                  pct(r.traced_spans if r.traced_spans is not None or not traced else 0.0))
    console.print(t)
    console.print("  traced spans %: the domains of the training documents the run's long spans were found in "
                  "(fct_span_domains), a check beside the classifier's estimate, not an estimate: text repeated "
                  "in training is over-represented" + ("." if traced else "; '-': the run is not traced."),
                  style="dim")
    if m.overlap_accuracy:
        best = ", ".join(f"{e} {100 * v:.1f}" for e, v in m.overlap_accuracy.items())
        console.print(f"  overlap accuracy with the documented mixture, %: {best}", soft_wrap=False)
    covered, known = m.n_covered
    if known:
        console.print(f"  {INTERVAL_ESTIMATOR}'s interval covers the documented share in {covered} of {known} "
                      "domains. The intervals resample generations and reference documents: they measure sampling "
                      "noise, not the gap between what a small model writes and what it was trained on "
                      "(docs/mixture-method.md, 'Reading the intervals').", style="dim")
