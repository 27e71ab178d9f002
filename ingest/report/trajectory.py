"""The training-trajectory figure (fct_mixture_trajectory, fct_propme_trajectory): how the estimated mixture
approaches the documented one as training goes on, and when PropMe's headline metrics rise. One row of
panels per trained model (base_model), at most three."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ingest.report.plotting import plt, query_rows, save_figure

ESTIMATORS = ("pacc", "direct", "mia_loss", "mia_mink")
METRICS = (("r50", "R50"), ("fmr20", "FMR20"), ("nvr", "NVR"))


def trajectory_figure(con, path: Path) -> bool:
    mix = query_rows(con, "select base_model, step, estimator, domain, estimate, ci_low, ci_high, truth, "
                          "overlap_accuracy "
                     "from fct_mixture_trajectory order by base_model, step")
    pm = query_rows(con, "select base_model, step, metric, value, ci_low, ci_high from fct_propme_trajectory "
                    "where value is not null order by base_model, step")
    models = sorted({r["base_model"] for r in mix} | {r["base_model"] for r in pm})[:3]
    if not models:
        return False
    fig, axes = plt.subplots(len(models), 3, figsize=(16, 4 * len(models)), squeeze=False)
    for row, m in zip(axes, models):
        _domains(row[0], [r for r in mix if r["base_model"] == m and r["estimator"] == "pacc"])
        _accuracy(row[1], [r for r in mix if r["base_model"] == m])
        _propme(row[2], [r for r in pm if r["base_model"] == m])
        name = Path(m).parent.name if Path(m).name == "model" else Path(m).name
        row[0].set_title(f"{name}: pacc (95% CI) vs truth (dashed)", fontsize=9)
    fig.suptitle("Training trajectories: mixture estimate and memorization metrics per checkpoint")
    return save_figure(fig, path)


def _num(x) -> float:
    return np.nan if x is None else float(x)


def _domains(ax, rows: list[dict]) -> None:
    for i, d in enumerate(sorted({r["domain"] for r in rows})):
        mine = [r for r in rows if r["domain"] == d]
        x = [r["step"] for r in mine]
        color = f"C{i}"
        ax.plot(x, [_num(r["estimate"]) for r in mine], marker="o", color=color, label=d)
        ax.fill_between(x, [_num(r["ci_low"]) for r in mine], [_num(r["ci_high"]) for r in mine], color=color,
                        alpha=0.15)
        ax.plot(x, [_num(r["truth"]) for r in mine], linestyle="--", color=color)
    ax.set_xlabel("training step")
    ax.set_ylabel("share of training documents")
    ax.set_ylim(0, 1)
    ax.legend(fontsize=7)


def _accuracy(ax, rows: list[dict]) -> None:
    for e in ESTIMATORS:
        pts = sorted({(r["step"], r["overlap_accuracy"]) for r in rows
                      if r["estimator"] == e and r["overlap_accuracy"] is not None})
        if pts:
            ax.plot([p[0] for p in pts], [100 * float(p[1]) for p in pts], marker="o", label=e)
    ax.set_xlabel("training step")
    ax.set_ylabel("overlap accuracy vs documented mixture (%)")
    ax.set_ylim(0, 100)
    ax.set_title("Mixture estimators: overlap accuracy", fontsize=9)
    ax.legend(fontsize=7)


def _propme(ax, rows: list[dict]) -> None:
    """ALS (tokens) on the left axis, the rates (R50, FMR20, NVR; share of generations) on the right one."""
    als = [r for r in rows if r["metric"] == "als"]
    if als:
        _series(ax, als, "ALS (tokens, left)", "black")
    ax.set_ylabel("ALS: mean longest span (tokens)")
    right = ax.twinx()
    handles = ax.get_legend_handles_labels()
    for i, (metric, label) in enumerate(METRICS):
        mine = [r for r in rows if r["metric"] == metric]
        if mine:
            _series(right, mine, f"{label} (right)", f"C{i}")
    right.set_ylabel("share of generations")
    right.set_ylim(bottom=0)
    h2 = right.get_legend_handles_labels()
    right.legend(handles[0] + h2[0], handles[1] + h2[1], fontsize=7, loc="upper left")
    ax.set_xlabel("training step")
    ax.set_title("PropMe headline metrics (unconditional, 95% CI)", fontsize=9)


def _series(ax, rows: list[dict], label: str, color: str) -> None:
    v = np.array([_num(r["value"]) for r in rows])
    lo = np.array([_num(r["ci_low"]) for r in rows])
    hi = np.array([_num(r["ci_high"]) for r in rows])
    err = np.nan_to_num(np.vstack([np.clip(v - lo, 0, None), np.clip(hi - v, 0, None)]))
    ax.errorbar([r["step"] for r in rows], v, yerr=err, marker="o", capsize=3, label=label, color=color)
