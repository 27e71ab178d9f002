"""The report's PropMe analyses: the papers' wide tables (settings x metrics with intervals; models x settings
for PM), a metric glossary, and the figures of the further analyses (cumulative filters, targeted extraction
by source duplication, chance level), every bar labelled with the run it shows.

Each figure takes a read-only DuckDB connection and a path and returns False when its mart has no rows; each
table returns HTML (a note instead of a crash when a mart is missing), like `ingest.report.figures`."""

from __future__ import annotations

import html
from pathlib import Path

import numpy as np

from ingest.report.plotting import label_bars, plt, query_rows, save_figure, setting_order, short_runs

WIDE_METRICS = ("fmr", "fmr50", "als", "nvr", "r20", "r50", "te")
PM_METRICS = ("fmr", "nvr", "r50", "fmr50")
STEP_NAMES = {1: "none", 2: "+ short matches", 3: "+ code", 4: "+ duplicated (< 10)", 5: "+ not unique"}

# The analyses' glossary beside the metric catalog (int_metric_definitions): name -> what it is.
ANALYSES_GLOSSARY = [
    ("PM", "propensity: f_p / (f_p + f_c), a metric in a non-adversarial setting against the prefix attack on "
           "the same model and corpus; 0.5 = as much as the attack, 0 when f_p = 0"),
    ("interval", "95% percentile bootstrap over prompts (with all their samples) or, without prompts, over "
                 "generations; [0, 0] when a proportion has no event (the rule-of-three bound 3/n is in "
                 "upper_rule_of_three)"),
    ("cumulative filters", "FMR, NVR, R50 after none, + short matches removed (>= 50 tokens only), + code-like "
                           "generations removed, + spans occurring >= 10 times removed, + only spans occurring once"),
    ("chance level", "the longest spans the prompt texts themselves match (they are not training text)"),
    ("source duplication", "how often a prefix prompt's source sequence (prompt + true continuation) occurs "
                           "in the corpus: once, 2-9, 10-99, 100+"),
    ("long-match category", "code, licence/boilerplate, documentation, prose or other: the domain of the "
                            "documents a >= 20-token span was found in, else rules on its text"),
    ("closeness", "cosine similarity of a sentence's embedding to its nearest document of an independent "
                  "sample of training documents (lmaudit prompts specific; embedder named in the table)"),
    ("independent difference", "metric(run a) - metric(run b) for prompt-free runs, each run resampled on its "
                               "own (no prompts pair them); significant when the interval excludes 0"),
]


def interval_bars(ax, got: dict, keys: list, value: str, offset: float, width: float, label: str):
    """One bar per key (`got[key][value]`, NaN-safe) with its ci_low/ci_high as error bars, shifted by
    `offset`; returns (bars, upper ends of the intervals) for `label_bars`."""
    v = np.array([got[k][value] if k in got else np.nan for k in keys], float)
    lo = np.array([got[k]["ci_low"] if k in got else np.nan for k in keys], float)
    hi = np.array([got[k]["ci_high"] if k in got else np.nan for k in keys], float)
    err = np.nan_to_num(np.vstack([np.clip(v - lo, 0, None), np.clip(hi - v, 0, None)]))
    bars = ax.bar(np.arange(len(keys)) + offset, np.nan_to_num(v), width, yerr=err, capsize=3, label=label)
    return bars, hi


def _fmt(v, lo=None, hi=None, digits: int = 3) -> str:
    if v is None:
        return ""
    s = f"{float(v):.{digits}f}"
    if lo is not None and hi is not None:
        s += f" [{float(lo):.{digits}f}, {float(hi):.{digits}f}]"
    return s


def _html_table(head: list[str], rows: list[list[str]]) -> str:
    h = "".join(f"<th>{html.escape(c)}</th>" for c in head)
    b = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{h}</tr></thead><tbody>{b}</tbody></table>"


def _guard(title: str, fn) -> str:
    try:
        body = fn()
    except Exception as e:  # noqa: BLE001 - a missing mart leaves a note, not a crash
        body = f"<p><em>not available: {html.escape(str(e).splitlines()[0])}</em></p>"
    return f"<h2>{html.escape(title)}</h2>{body or '<p><em>no rows</em></p>'}"


# ------------------------------------------------------------------------------------------------ tables
def settings_by_metrics(con) -> str:
    """Settings x metrics, one block per model: value [ci_low, ci_high] of each run (the papers' Table 18)."""
    rows = query_rows(con, "select run_id, model_name, setting, metric, value, ci_low, ci_high "
                           "from fct_setting_metrics "
                      f"where metric in ({', '.join(repr(m) for m in WIDE_METRICS)})")
    if not rows:
        return ""
    cells: dict[tuple, dict[str, str]] = {}
    for r in rows:
        cells.setdefault((r["model_name"], r["setting"], r["run_id"]), {})[r["metric"]] = _fmt(
            r["value"], r["ci_low"], r["ci_high"])
    order = {s: i for i, s in enumerate(setting_order({k[1] for k in cells}))}
    keys = sorted(cells, key=lambda k: (k[0] or "", order.get(k[1], 99), k[2]))
    body = [[k[0] or "", k[1], k[2], *[cells[k].get(m, "") for m in WIDE_METRICS]] for k in keys]
    return _html_table(["model", "setting", "run", *[m.upper() for m in WIDE_METRICS]], body)


def models_by_settings_pm(con) -> str:
    """Models x settings of PM with intervals, one table per metric (the papers' Table 19)."""
    rows = query_rows(con, "select coalesce(n.model_name, p.model) as model, p.propensity_setting, "
                           "p.propensity_run_id, "
                      "p.metric, p.pm, p.ci_low, p.ci_high from fct_propensity as p left join (select distinct "
                      "run_id, model_name from fct_setting_metrics) as n on p.propensity_run_id = n.run_id "
                      f"where p.metric in ({', '.join(repr(m) for m in PM_METRICS)})")
    if not rows:
        return ""
    settings = setting_order({r["propensity_setting"] for r in rows})
    out = []
    for metric in PM_METRICS:
        mine = [r for r in rows if r["metric"] == metric]
        if not mine:
            continue
        by_model: dict[str, dict[str, list[str]]] = {}
        for r in mine:
            cell = _fmt(r["pm"], r["ci_low"], r["ci_high"]) or "n/a"
            by_model.setdefault(r["model"], {}).setdefault(r["propensity_setting"], []).append(
                f"{cell} ({r['propensity_run_id']})" if len({x['propensity_run_id'] for x in mine
                                                              if x['model'] == r['model']
                                                              and x['propensity_setting'] == r['propensity_setting']}) > 1
                else cell)
        body = [[m, *["; ".join(by_model[m].get(s, [])) for s in settings]] for m in sorted(by_model)]
        out.append(f"<h3>PM<sub>{html.escape(metric.upper())}</sub></h3>" + _html_table(["model", *settings], body))
    return "".join(out)


def glossary(con) -> str:
    rows = query_rows(con, "select metric, description from int_metric_definitions order by metric")
    body = [[r["metric"], r["description"]] for r in rows] + [[n, d] for n, d in ANALYSES_GLOSSARY]
    return _html_table(["name", "definition"], body)


def chance_level_table(con) -> str:
    rows = query_rows(con, "select model_name, setting, run_id, n_prompts_traced, prompt_als, prompt_max_span, "
                      "prompt_r20, run_als, run_r20, prompt_als_share, null_reason from fct_chance_level")
    order = {s: i for i, s in enumerate(setting_order({r["setting"] for r in rows}))}
    rows.sort(key=lambda r: (r["model_name"] or "", order.get(r["setting"], 99), r["run_id"]))
    return _html_table(["model", "setting", "run", "prompts traced", "prompt ALS", "longest prompt span",
                        "prompts with >= 20-token span", "run ALS", "run R20", "prompt ALS / run ALS", "note"],
                       [[r["model_name"] or "", r["setting"], r["run_id"], str(r["n_prompts_traced"]),
                         _fmt(r["prompt_als"], digits=2), "" if r["prompt_max_span"] is None else str(r["prompt_max_span"]),
                         _fmt(r["prompt_r20"]), _fmt(r["run_als"], digits=2), _fmt(r["run_r20"]),
                         _fmt(r["prompt_als_share"]), r["null_reason"] or ""] for r in rows]) if rows else ""


def source_duplication_table(con) -> str:
    rows = query_rows(con, "select model_name, run_id, bucket, n_prompts, n_hits, n_eligible, te, ci_low, ci_high, "
                      "null_reason from fct_source_duplication order by model_name, run_id, bucket_order")
    return _html_table(["model", "run", "source occurs", "prompts", "samples reproducing / samples", "TE [95% CI]",
                        "note"],
                       [[r["model_name"] or "", r["run_id"], r["bucket"], str(r["n_prompts"]),
                         f"{r['n_hits']} / {r['n_eligible']}", _fmt(r["te"], r["ci_low"], r["ci_high"]),
                         r["null_reason"] or ""] for r in rows]) if rows else ""


def independent_differences_table(con) -> str:
    rows = query_rows(con, "select setting, run_a, run_b, metric, diff, ci_low, ci_high, significant, null_reason "
                      "from fct_independent_run_differences where metric in ('fmr', 'fmr50', 'als', 'nvr', 'r50') "
                      "order by setting, run_a, run_b, metric")
    return _html_table(["setting", "run a", "run b", "metric", "a - b [95% CI]", "significant", "note"],
                       [[r["setting"], r["run_a"], r["run_b"], r["metric"], _fmt(r["diff"], r["ci_low"], r["ci_high"], 4),
                         "" if r["significant"] is None else ("yes" if r["significant"] else "no"),
                         r["null_reason"] or ""] for r in rows]) if rows else ""


def long_match_categories_table(con) -> str:
    """Runs x categories of long matches: count (share), the papers' content analysis by rule."""
    rows = query_rows(con, "select run_id, setting, category, n_generations, share_of_long_matches "
                      "from fct_long_match_categories")
    if not rows:
        return ""
    cats = ["code", "licence_boilerplate", "documentation", "prose", "other"]
    order = {s: i for i, s in enumerate(setting_order({r["setting"] for r in rows}))}
    runs = sorted({(r["setting"], r["run_id"]) for r in rows}, key=lambda k: (order.get(k[0], 99), k[1]))
    cell = {(r["run_id"], r["category"]): f"{r['n_generations']} ({100 * r['share_of_long_matches']:.0f}%)"
            for r in rows}
    return _html_table(["setting", "run", *cats], [[s, run, *[cell.get((run, c), "") for c in cats]]
                                                   for s, run in runs])


GROUP_LABELS = {"generic": "generic sentences", "candidate": "specific candidates (before selection)",
                "specific": "specific prompts (selected)", "training_sentence": "training sentences"}


def prompt_closeness_table(con) -> str:
    """The closeness evaluation: each group's mean similarity to the nearest training document, and its
    difference to the generic sentences (independent bootstrap)."""
    rows = query_rows(con, "select corpus_name, prompt_set, item_group, n_items, mean_similarity, ci_low, ci_high, "
                      "diff_vs_generic, diff_ci_low, diff_ci_high, closer_than_generic, embedder "
                      "from fct_prompt_closeness order by corpus_name, prompt_set, group_order")
    return _html_table(["corpus", "prompt set", "group", "items", "mean similarity [95% CI]",
                        "minus generic [95% CI]", "closer than generic", "embedder"],
                       [[r["corpus_name"] or "", r["prompt_set"][:12], GROUP_LABELS.get(r["item_group"], r["item_group"]),
                         str(r["n_items"]), _fmt(r["mean_similarity"], r["ci_low"], r["ci_high"]),
                         _fmt(r["diff_vs_generic"], r["diff_ci_low"], r["diff_ci_high"]),
                         "" if r["item_group"] == "generic" else ("yes" if r["closer_than_generic"] else "no"),
                         r["embedder"] or ""] for r in rows]) if rows else ""


def propme_tables_html(con) -> str:
    """Every PropMe table of the report, in reading order."""
    return "".join([
        _guard("Metrics: settings x metrics (95% bootstrap intervals)", lambda: settings_by_metrics(con)),
        _guard("Propensity: models x settings (95% bootstrap intervals)", lambda: models_by_settings_pm(con)),
        _guard("Chance level: matches of the prompts themselves", lambda: chance_level_table(con)),
        _guard("Closeness of the prompts to the training data (specific-prompt pipeline)",
               lambda: prompt_closeness_table(con)),
        _guard("Targeted extraction by duplication of the source sequence", lambda: source_duplication_table(con)),
        _guard("What long matches are (>= 20-token spans, by category)", lambda: long_match_categories_table(con)),
        _guard("Differences between prompt-free runs (independent bootstrap)",
               lambda: independent_differences_table(con)),
        _guard("Glossary", lambda: glossary(con)),
    ])


# ----------------------------------------------------------------------------------------------- figures
def cumulative_filters(con, path: Path) -> bool:
    """PM of FMR, NVR, R50 after each cumulative filter, one panel per propensity run (the paper's filter
    figure); runs without a PM (no prefix run) show the metric itself."""
    rows = query_rows(con, "select run_id, model, setting, metric, step, value, ci_low, ci_high, pm, pm_ci_low, "
                      "pm_ci_high from fct_cumulative_filters where metric in ('fmr', 'nvr', 'r50') "
                      "and setting_kind = 'propensity' and pm is not null")
    if not rows:
        return False
    runs = sorted({r["run_id"] for r in rows}, key=lambda x: (setting_order([next(r["setting"] for r in rows
                                                                            if r["run_id"] == x)]), x))
    labels = short_runs(runs)
    fig, axes = plt.subplots(1, len(runs), figsize=(4 * len(runs), 3.8), squeeze=False, sharey=True)
    metrics = ("fmr", "nvr", "r50")
    width = 0.8 / len(metrics)
    for ax, run in zip(axes[0], runs):
        for j, m in enumerate(metrics):
            got = {r["step"]: r for r in rows if r["run_id"] == run and r["metric"] == m}
            v = np.array([np.nan if got.get(s, {}).get("pm") is None else got[s]["pm"] for s in STEP_NAMES], float)
            lo = np.array([np.nan if got.get(s, {}).get("pm_ci_low") is None else got[s]["pm_ci_low"]
                           for s in STEP_NAMES], float)
            hi = np.array([np.nan if got.get(s, {}).get("pm_ci_high") is None else got[s]["pm_ci_high"]
                           for s in STEP_NAMES], float)
            err = np.nan_to_num(np.vstack([np.clip(v - lo, 0, None), np.clip(hi - v, 0, None)]))
            ax.bar(np.arange(len(STEP_NAMES)) + (j - 1) * width, v, width, yerr=err, capsize=2,
                   label=f"PM {m.upper()}")
        ax.axhline(0.5, color="grey", linestyle="--", linewidth=1)
        ax.set_ylim(0, 1.05)
        ax.set_xticks(np.arange(len(STEP_NAMES)), list(STEP_NAMES.values()), rotation=35, ha="right", fontsize=8)
        ax.set_title(f"run {labels[run]}", fontsize=9)
    axes[0, 0].set_ylabel("PM against the prefix run")
    axes[0, 0].legend(fontsize=7)
    fig.suptitle("Propensity as filters are applied one after another (95% intervals; 0.5 = neutral)")
    return save_figure(fig, path)


def source_duplication(con, path: Path) -> bool:
    """Targeted extraction by how often the source sequence occurs; every bar labelled with its run and the
    number of prompts behind it."""
    rows = query_rows(con, "select run_id, bucket, bucket_order, n_prompts, te, ci_low, ci_high "
                      "from fct_source_duplication where te is not null order by bucket_order")
    if not rows:
        return False
    buckets = [b for _, b in sorted({(r["bucket_order"], r["bucket"]) for r in rows})]
    runs = sorted({r["run_id"] for r in rows})
    labels = short_runs(runs)
    width = 0.8 / len(runs)
    fig, ax = plt.subplots(figsize=(8, 4))
    for j, run in enumerate(runs):
        got = {r["bucket"]: r for r in rows if r["run_id"] == run}
        bars, hi = interval_bars(ax, got, buckets, "te", (j - (len(runs) - 1) / 2) * width, width, labels[run])
        label_bars(ax, bars, [f"{labels[run]}\nn={got[b]['n_prompts']}" if b in got else "" for b in buckets], hi,
                   rotation=0)
    ax.set_xticks(np.arange(len(buckets)), [f"{b}" for b in buckets])
    ax.set_xlabel("occurrences of the source sequence (prompt + true continuation) in the corpus")
    ax.set_ylabel("targeted extraction rate")
    ax.set_ylim(0, 1.3)
    ax.set_title("Targeted extraction against duplication of the source (n = prompts)")
    ax.legend(fontsize=7, loc="upper left")
    return save_figure(fig, path)


def chance_level(con, path: Path) -> bool:
    """The prompts' own mean longest span beside each run's ALS, bars labelled by run."""
    rows = query_rows(con, "select run_id, setting, prompt_als, run_als from fct_chance_level "
                           "where prompt_als is not null")
    if not rows:
        return False
    order = {s: i for i, s in enumerate(setting_order({r["setting"] for r in rows}))}
    rows.sort(key=lambda r: (order.get(r["setting"], 99), r["run_id"]))
    labels = short_runs([r["run_id"] for r in rows])
    x = np.arange(len(rows))
    fig, ax = plt.subplots(figsize=(8, 4))
    b1 = ax.bar(x - 0.2, [r["prompt_als"] or 0 for r in rows], 0.4, label="prompt text alone (chance level)")
    b2 = ax.bar(x + 0.2, [r["run_als"] or 0 for r in rows], 0.4, label="generations (run ALS)")
    label_bars(ax, b1, [labels[r["run_id"]] for r in rows])
    label_bars(ax, b2, [labels[r["run_id"]] for r in rows])
    ax.set_xticks(x, [r["setting"] for r in rows], rotation=20, ha="right")
    ax.set_ylabel("mean longest matching span (tokens)")
    ax.set_ylim(0, max([r["prompt_als"] or 0 for r in rows] + [r["run_als"] or 0 for r in rows] + [1]) * 1.35)
    ax.set_title("Chance level: what the prompts match on their own")
    ax.legend(fontsize=7, loc="upper left")
    return save_figure(fig, path)


def prompt_closeness(con, path: Path) -> bool:
    """Mean similarity to the nearest training document per prompt group, with intervals, one bar group per
    specific prompt set; every bar labelled with its number of items."""
    rows = query_rows(con, "select corpus_name, prompt_set, item_group, group_order, n_items, mean_similarity, ci_low, "
                      "ci_high from fct_prompt_closeness order by corpus_name, prompt_set, group_order")
    if not rows:
        return False
    sets = list(dict.fromkeys((r["corpus_name"] or "", r["prompt_set"]) for r in rows))
    groups = list(GROUP_LABELS)
    width = 0.8 / len(groups)
    fig, ax = plt.subplots(figsize=(max(6, 2.8 * len(sets)), 4))
    for j, g in enumerate(groups):
        got = {(r["corpus_name"] or "", r["prompt_set"]): r for r in rows if r["item_group"] == g}
        bars, hi = interval_bars(ax, got, sets, "mean_similarity", (j - (len(groups) - 1) / 2) * width, width,
                                 GROUP_LABELS[g])
        label_bars(ax, bars, [f"n={got[k]['n_items']}" if k in got else "" for k in sets], hi, rotation=0)
    ax.set_xticks(np.arange(len(sets)), [f"{c}\nset {p[:8]}" for c, p in sets], fontsize=8)
    ax.set_ylabel("cosine similarity to the nearest training document")
    ax.set_ylim(0, 1.15)
    ax.set_title("How close the prompts are to the training data (95% intervals)")
    ax.legend(fontsize=7, loc="upper left", ncol=2)
    return save_figure(fig, path)


PROPME_FIGURES = {
    "cumulative_filters": (cumulative_filters, "Propensity as filters are applied one after another"),
    "source_duplication": (source_duplication, "Targeted extraction by duplication of the source"),
    "chance_level": (chance_level, "Chance level: matches of the prompts themselves"),
    "prompt_closeness": (prompt_closeness, "Closeness of the prompts to the training data"),
}
