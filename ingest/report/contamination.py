"""The report's contamination section: per benchmark the share of items clean / partly / contaminated, the
reproduction rate of each prefix-attacked model, and the score on clean vs contaminated items with its
interval (fct_contamination_benchmarks, fct_contamination_scores; docs/contamination.md). Empty when no
benchmark was traced, so a warehouse without one shows nothing."""

from __future__ import annotations

import base64
import html
from pathlib import Path

from ingest.report.plotting import plt, query_rows, save_figure

TABLE_SQL = """
select b.benchmark, b.model, b.n_items as items, b.n_clean as clean, b.n_partly as partly,
       b.n_contaminated as contaminated, round(100 * b.contamination_rate, 1) as contaminated_pct,
       round(100 * b.reproduction_rate, 1) as reproduced_pct,
       round(100 * b.reproduction_rate_contaminated, 1) as reproduced_contaminated_pct,
       round(100 * b.reproduction_rate_clean, 1) as reproduced_clean_pct,
       round(s.score_clean, 3) as score_clean, round(s.score_contaminated, 3) as score_contaminated,
       round(s.gap, 3) as gap, round(s.gap_lower, 3) as gap_lower, round(s.gap_upper, 3) as gap_upper, b.ngram
from fct_contamination_benchmarks b
left join fct_contamination_scores s on b.benchmark = s.benchmark and b.trace_id = s.trace_id
order by b.benchmark, b.model
"""


def _html_table(rows: list[dict]) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in rows[0])
    body = "".join("<tr>" + "".join(f"<td>{'' if v is None else html.escape(str(v))}</td>" for v in r.values())
                   + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def class_figure(rows: list[dict], path: Path) -> bool:
    """One stacked bar per benchmark: shares of clean, partly and contaminated items."""
    seen: dict[str, dict] = {}
    for r in rows:
        seen.setdefault(r["benchmark"], r)
    if not seen:
        return False
    names = list(seen)
    fig, ax = plt.subplots(figsize=(max(5.5, 1.2 * len(names) + 2), 3.2))
    bottom = [0.0] * len(names)
    for cls, colour in (("clean", "#4c9a5b"), ("partly", "#e0a83a"), ("contaminated", "#c0392b")):
        share = [seen[n][cls] / seen[n]["items"] for n in names]
        ax.bar(names, share, bottom=bottom, color=colour, label=cls)
        bottom = [b + s for b, s in zip(bottom, share)]
    ax.set_ylabel("share of items")
    ax.set_ylim(0, 1)
    ax.legend(fontsize=8, loc="upper right")
    ax.set_title(f"Benchmark items in the corpus ({rows[0]['ngram']}-gram rule)", fontsize=10)
    return save_figure(fig, path)


def contamination_section(con, out: Path) -> tuple[str, dict[str, Path], list[str]]:
    """(HTML, images written, skipped notes) of the section; nothing at all when no benchmark was traced."""
    try:
        rows = query_rows(con, TABLE_SQL)
    except Exception as e:  # noqa: BLE001 - the marts not built yet: a note, not a crash
        return "", {}, [f"contamination: {str(e).splitlines()[0]}"]
    if not rows:
        return "", {}, []
    png = out / "contamination_classes.png"
    images = {"contamination_classes": png} if class_figure(rows, png) else {}
    img = ""
    if images:
        data = base64.b64encode(png.read_bytes()).decode()
        img = f"<img src='data:image/png;base64,{data}' alt='contamination_classes'>"
    note = ("<p><small>clean: no n-gram of the item in the corpus; contaminated: at least the var's share of its "
            "tokens in found n-grams; reproduced: the model's greedy continuation of the input starts with the "
            "answer; gap: score on contaminated minus clean items, with its bootstrap interval.</small></p>")
    return f"<h2>Benchmark contamination</h2>{img}{_html_table(rows)}{note}", images, []
