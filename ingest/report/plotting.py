"""Plotting helpers shared by the report's figure modules (figures.py, propme_analyses.py, trajectory.py).

matplotlib is set to its file-only backend here, once, before pyplot is imported anywhere in the report, and
every figure module takes `plt` from this module, so none of them imports another's private helpers.
"""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

SETTING_ORDER = ["unconditional", "minimal_cue", "generic", "specific", "prefix"]


def query_rows(con, sql: str) -> list[dict]:
    """The rows of a query as dicts (column name -> value)."""
    cur = con.execute(sql)
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r)) for r in cur.fetchall()]


def setting_order(settings):
    """Settings in the papers' order (unconditional .. prefix), others after them by name."""
    return sorted(set(settings), key=lambda s: (SETTING_ORDER.index(s.split(" ")[0])
                                                if s.split(" ")[0] in SETTING_ORDER else 99, s))


def save_figure(fig, path: Path) -> bool:
    """Lay out, write and close a figure; True (a figure was drawn)."""
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def short_runs(run_ids) -> dict[str, str]:
    """Each run id without the prefix all of them share (the sandbox's 'sandbox-tiny-'), for bar labels."""
    ids = sorted({r for r in run_ids if r})
    common = os.path.commonprefix(ids) if len(ids) > 1 else ""
    common = common[:common.rfind("-") + 1] if "-" in common else ""
    return {r: (r[len(common):] or r) for r in ids}


def label_bars(ax, bars, labels, tops=None, fontsize: int = 7, rotation: int = 90) -> None:
    """Write each bar's label (its run, and a count) just above the bar or its interval (`tops`: the upper
    ends of the error bars), rotated by default so that long run ids fit between neighbours."""
    tops = [None] * len(labels) if tops is None else list(tops)
    for bar, label, top in zip(bars, labels, tops):
        if not label:
            continue
        y = bar.get_y() + bar.get_height()
        y = y if top is None or not np.isfinite(top) else max(y, float(top))
        ax.annotate(label, (bar.get_x() + bar.get_width() / 2, y), xytext=(0, 3), textcoords="offset points",
                    ha="center", va="bottom", rotation=rotation, fontsize=fontsize)
