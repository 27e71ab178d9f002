"""Links from the HTML report into the explorer: each run's generations, served (`lmaudit explore --serve`,
default port) and, when `lmaudit explore --out <warehouse>/explore` was written, as files next to the report."""

from __future__ import annotations

import html
import os
from pathlib import Path
from urllib.parse import quote

SERVED = "http://127.0.0.1:8765/"
STATIC_DIR = "explore"  # <warehouse>/explore: where the report looks for a static export


def run_hash(run_id: str) -> str:
    return "#/gens?run=" + quote(run_id, safe="")


def report_section(con, home: Path, report_dir: Path) -> str:
    """An HTML section with one line per run (every text escaped); empty when there are no runs."""
    try:
        runs = [r[0] for r in con.execute("select run_id from stg_runs order by run_id").fetchall()]
    except Exception:  # noqa: BLE001 - no runs view: no section
        return ""
    if not runs:
        return ""
    static = home / STATIC_DIR / "index.html"
    rel = os.path.relpath(static, report_dir) if static.exists() else None
    items = []
    for r in runs:
        links = [f"<a href='{html.escape(SERVED + run_hash(r), quote=True)}'>served</a>"]
        if rel:
            links.append(f"<a href='{html.escape(Path(rel).as_posix() + run_hash(r), quote=True)}'>files</a>")
        items.append(f"<li>{html.escape(r)}: {' | '.join(links)}</li>")
    how = ("<code>lmaudit explore --serve</code> for the served links"
           + ("" if rel else f", <code>lmaudit explore --out {html.escape(str(home / STATIC_DIR))}</code> for files"))
    return (f"<h2>Trace explorer</h2><p>Every generation of a run with its spans and their training documents "
            f"({how}).</p><ul>{''.join(items)}</ul>")
