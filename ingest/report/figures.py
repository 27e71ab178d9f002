"""One function per figure. Each takes a read-only DuckDB connection and a path, and returns False (and
draws nothing) when its mart has no rows, so a partial warehouse still gets a report."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ingest.report.plotting import label_bars, plt, query_rows, save_figure, setting_order, short_runs

HEADLINE = [("fmr", "FMR (full match rate)"), ("als", "ALS (mean longest span, tokens)"),
            ("nvr", "NVR (near-verbatim recall)"), ("r50", "R50 (share with a >= 50-token span)")]


def _group_runs(rows: list[dict], setting_key: str, run_key: str) -> str:
    """Give each row a "group" to plot by: its setting, or "setting (run)" where a model has several runs of
    that setting (the demo's neutral run next to its PropMe unconditional run). Returns the group key."""
    import os

    runs: dict[tuple, set] = {}
    for r in rows:
        runs.setdefault((r.get("model"), r[setting_key]), set()).add(r[run_key])
    common = os.path.commonprefix(sorted({r[run_key] for r in rows})) if rows else ""
    for r in rows:
        rest = r[run_key][len(common):] or r[run_key]
        several = len(runs[(r.get("model"), r[setting_key])]) > 1
        r["group"] = f"{r[setting_key]} ({rest})" if several and rest != r[setting_key] else r[setting_key]
    return "group"


def _errbars(vals, lo, hi):
    v = np.array([np.nan if x is None else x for x in vals], dtype=float)
    lo = np.array([np.nan if x is None else x for x in lo], dtype=float)
    hi = np.array([np.nan if x is None else x for x in hi], dtype=float)
    return v, np.vstack([np.clip(v - lo, 0, None), np.clip(hi - v, 0, None)])


def _bars(ax, got: dict, groups: list, value: str, offset: float, width: float, label: str) -> None:
    """One series of bars at `groups` (+ offset) with bootstrap intervals; `got` maps a group to its row."""
    v, err = _errbars([got.get(g, {}).get(value) for g in groups], [got.get(g, {}).get("ci_low") for g in groups],
                      [got.get(g, {}).get("ci_high") for g in groups])
    bars = ax.bar(np.arange(len(groups)) + offset, np.nan_to_num(v), width, yerr=np.nan_to_num(err), capsize=3,
                  label=label)

    runs = [got.get(g, {}).get("run_id") or got.get(g, {}).get("propensity_run_id") for g in groups]
    short = short_runs(r for r in runs if r)  # without the prefix the series' runs share
    label_bars(ax, bars, [short.get(r, "") if r else "" for r in runs], [got.get(g, {}).get("ci_high") for g in groups],
               fontsize=6)
    ax.margins(y=0.45)


def metric_bars(con, path: Path) -> bool:
    rows = query_rows(con, "select run_id, model, setting, metric, value, ci_low, ci_high from fct_setting_metrics "
                      "where metric in ('fmr', 'als', 'nvr', 'r50')")
    if not rows:
        return False
    key = _group_runs(rows, "setting", "run_id")
    models = sorted({r["model"] for r in rows})
    settings = setting_order(r[key] for r in rows)
    fig, axes = plt.subplots(1, 4, figsize=(16, 4))
    width = 0.8 / max(1, len(models))
    for ax, (metric, title) in zip(axes, HEADLINE):
        for j, m in enumerate(models):
            got = {r[key]: r for r in rows if r["metric"] == metric and r["model"] == m}
            name = Path(m).parent.name if Path(m).name == "model" else Path(m).name  # sandbox: <size>-seed<n>/model
            _bars(ax, got, settings, "value", (j - (len(models) - 1) / 2) * width, width, name)
        ax.set_xticks(np.arange(len(settings)), settings, rotation=30, ha="right")
        ax.set_title(title, fontsize=10)
    axes[0].legend(fontsize=8)
    fig.suptitle("Memorization metrics per setting (95% bootstrap intervals)")
    return save_figure(fig, path)


def propensity(con, path: Path) -> bool:
    rows = query_rows(con, "select propensity_run_id, model, propensity_setting, metric, pm, ci_low, ci_high "
                      "from fct_propensity where metric in ('fmr', 'nvr', 'r50') and pm is not null")
    if not rows:
        return False
    key = _group_runs(rows, "propensity_setting", "propensity_run_id")
    settings = setting_order(r[key] for r in rows)
    metrics = ["fmr", "nvr", "r50"]
    fig, ax = plt.subplots(figsize=(8, 4))
    width = 0.8 / len(metrics)
    for j, m in enumerate(metrics):
        _bars(ax, {r[key]: r for r in rows if r["metric"] == m}, settings, "pm", (j - 1) * width, width, m.upper())
    ax.axhline(0.5, color="grey", linestyle="--", linewidth=1, label="neutral (0.5)")
    ax.set_ylim(0, 1.3)  # room for the run labels above the bars
    ax.set_xticks(np.arange(len(settings)), settings, rotation=20, ha="right")
    ax.set_ylabel("PM = f_p / (f_p + f_c)")
    ax.set_title("Memorization propensity vs the prefix attack")
    ax.legend(fontsize=8)
    return save_figure(fig, path)


def longest_spans(con, path: Path) -> bool:
    rows = query_rows(con, "select run_id, setting, longest_span from int_generation_facts where is_traced")
    if not rows:
        return False
    key = _group_runs(rows, "setting", "run_id")
    settings = setting_order(r[key] for r in rows)
    data = [[r["longest_span"] or 0 for r in rows if r[key] == s] for s in settings]
    fig, ax = plt.subplots(figsize=(8, 4))
    ax.boxplot(data, showfliers=True)
    ax.set_xticks(range(1, len(settings) + 1), settings, rotation=20, ha="right")
    ax.axhline(20, color="tab:orange", linestyle=":", linewidth=1, label="20 tokens (R20)")
    ax.axhline(50, color="tab:red", linestyle=":", linewidth=1, label="50 tokens (R50)")
    ax.set_ylim(0, max(55, max((max(d) for d in data if d), default=0) * 1.05))
    ax.legend(fontsize=8, loc="upper right")
    ax.set_ylabel("longest matching span (tokens)")
    ax.set_title("Longest span per generation")
    return save_figure(fig, path)


def duplication(con, path: Path) -> bool:
    rows = query_rows(con, "select setting, n_once, n_rare, n_frequent, n_long from fct_duplication where n_long > 0")
    if not rows:
        return False
    settings = setting_order(r["setting"] for r in rows)
    agg = {s: [sum((r[k] or 0) for r in rows if r["setting"] == s) for k in ("n_once", "n_rare", "n_frequent")]
           for s in settings}
    fig, ax = plt.subplots(figsize=(8, 4))
    bottom = np.zeros(len(settings))
    for i, label in enumerate(["occurs once", "< 10 times", ">= 10 times"]):
        vals = np.array([agg[s][i] / max(1, sum(agg[s])) for s in settings])
        bars = ax.bar(settings, vals, bottom=bottom, label=label)
        for bar, s in zip(bars, settings):  # the count behind each share
            if agg[s][i]:
                ax.text(bar.get_x() + bar.get_width() / 2, bar.get_y() + bar.get_height() / 2, f"n={agg[s][i]}",
                        ha="center", va="center", fontsize=7)
        bottom += vals
    ax.set_ylabel("share of long (>= 50-token) spans")
    ax.set_title("How often do reproduced long spans occur in the training corpus?")
    ax.legend(fontsize=8)
    return save_figure(fig, path)


def mixture(con, path: Path) -> bool:
    import json

    rows = query_rows(con, "select estimator, domains, truth, estimates, overlap_accuracy from fct_mixture_evaluation "
                      "where estimates is not null and truth is not null")
    if not rows:
        return False
    domains = json.loads(rows[0]["domains"]) if isinstance(rows[0]["domains"], str) else list(rows[0]["domains"])
    truth = json.loads(rows[0]["truth"]) if isinstance(rows[0]["truth"], str) else list(rows[0]["truth"])
    fig, ax = plt.subplots(figsize=(10, 4))
    width = 0.8 / (len(rows) + 1)
    x = np.arange(len(domains))
    ax.bar(x - 0.4 + width / 2, truth, width, label="documented", color="black")
    for j, r in enumerate(rows, start=1):
        est = json.loads(r["estimates"]) if isinstance(r["estimates"], str) else list(r["estimates"])
        ax.bar(x - 0.4 + width / 2 + j * width, est, width,
               label=f"{r['estimator']} ({100 * (r['overlap_accuracy'] or 0):.1f}%)")
    ax.set_xticks(x, domains)
    ax.set_ylabel("share of training data")
    ax.set_title("Estimated vs documented training mixture (overlap accuracy)")
    ax.legend(fontsize=7, ncol=2)
    return save_figure(fig, path)


def mixture_sources(con, path: Path) -> bool:
    """fct_mixture_sources: documented, tokenizer (bpe_merges), generation-based and traced shares per model."""
    rows = query_rows(con, "select * from fct_mixture_sources order by model, domain")
    if not rows:
        return False
    models = sorted({r["model"] for r in rows})[:6]
    cols = [("documented", "documented", "black"), ("tokenizer_estimate", "tokenizer (bpe_merges)", None),
            ("generation_estimate", "generations", None), ("traced_spans", "traced spans", None)]
    fig, axes = plt.subplots(len(models), 1, figsize=(10, 2.6 * len(models)), squeeze=False)
    for ax, m in zip(axes[:, 0], models):
        mine = [r for r in rows if r["model"] == m]
        x = np.arange(len(mine))
        for j, (col, label, color) in enumerate(cols):
            ax.bar(x - 0.3 + j * 0.2, [r[col] or 0 for r in mine], 0.2, label=label, color=color)
        ax.set_xticks(x, [r["domain"] for r in mine])
        ax.set_title(m if len(m) < 70 else "..." + m[-67:], fontsize=8)
        ax.set_ylabel("share")
    axes[0, 0].legend(fontsize=7, ncol=4)
    fig.suptitle("Training mixture: documented vs tokenizer vs generations vs traced spans")
    return save_figure(fig, path)


def trajectory(con, path: Path) -> bool:
    from ingest.report.trajectory import trajectory_figure  # its own module; imports helpers from this one

    return trajectory_figure(con, path)


FIGURES = {
    "metrics": (metric_bars, "Memorization metrics per setting"),
    "propensity": (propensity, "Propensity per setting"),
    "longest_spans": (longest_spans, "Longest-span distribution"),
    "duplication": (duplication, "Duplication of long spans"),
    "mixture": (mixture, "Mixture estimate vs documented mixture"),
    "mixture_sources": (mixture_sources, "Training mixture from every signal, per model"),
    "trajectory": (trajectory, "Training trajectories over checkpoints"),
}

