"""Assemble the report: PNGs plus one self-contained HTML page (images inlined, no external files)."""

from __future__ import annotations

import base64
import html
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from ingest.export import connect_marts
from ingest.names import output_dir
from ingest.report.figures import FIGURES

HEADLINE_SQL = """
select run_id, model_name, setting, metric, unit, round(value, 4) as value, round(ci_low, 4) as ci_low,
       round(ci_high, 4) as ci_high,
       ceil(round(upper_rule_of_three * 10000, 9)) / 10000 as upper_rule_of_three,  -- a bound: rounded up
       n_units, n_units_resampled, unit_kind, n_excluded, null_reason
from fct_setting_metrics where metric in ('fmr', 'fmr20', 'fmr_nonblank', 'als', 'nvr', 'r50')
order by model_name, setting, run_id, metric
"""
PROPENSITY_SQL = """
select propensity_run_id, propensity_setting, model, metric, round(f_p, 4) as f_p, round(f_c, 4) as f_c, round(pm, 3) as pm,
       round(ci_low, 3) as ci_low, round(ci_high, 3) as ci_high,
       ceil(round(pm_upper_rule_of_three * 1000, 9)) / 1000 as pm_upper_rule_of_three,
       null_reason
from fct_propensity where metric in ('fmr', 'nvr', 'r50') order by model, propensity_setting, propensity_run_id, metric
"""


@dataclass(frozen=True)
class Report:
    html: Path
    images: dict[str, Path]
    skipped: list[str]


def _table(con, sql: str) -> str:
    try:
        cur = con.execute(sql)
    except Exception as e:  # noqa: BLE001 - a missing mart leaves a note, not a crash
        return f"<p><em>not available: {html.escape(str(e).splitlines()[0])}</em></p>"
    cols = [d[0] for d in cur.description]
    rows = cur.fetchall()
    if not rows:
        return "<p><em>no rows</em></p>"
    head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
    body = "".join("<tr>" + "".join(f"<td>{'' if v is None else html.escape(str(v))}</td>" for v in r) + "</tr>"
                   for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def build_report(home: Path, out: Path | None = None) -> Report:
    from ingest.warehouse_db import require_database

    out = (out or home / "report").resolve()
    require_database(home)  # a mistyped warehouse is named before any folder is made for its report
    output_dir(out)
    con = connect_marts(home)
    images, skipped, sections = {}, [], []
    try:
        from ingest.report.propme_analyses import PROPME_FIGURES, propme_tables_html

        for name, (fn, title) in {**FIGURES, **PROPME_FIGURES}.items():
            png = out / f"{name}.png"
            try:
                drawn = fn(con, png)
            except Exception as e:  # noqa: BLE001
                drawn = False
                skipped.append(f"{name}: {str(e).splitlines()[0]}")
            if drawn:
                images[name] = png
                data = base64.b64encode(png.read_bytes()).decode()
                sections.append(f"<h2>{html.escape(title)}</h2><img src='data:image/png;base64,{data}' alt='{name}'>")
            elif not any(s.startswith(name) for s in skipped):
                skipped.append(f"{name}: no data")
        tables = (f"<h2>Headline metrics</h2>{_table(con, HEADLINE_SQL)}"
                  f"<h2>Propensity</h2>{_table(con, PROPENSITY_SQL)}")
        tables += propme_tables_html(con)  # wide tables, chance level, source duplication, glossary
        from ingest.report.tables import table2_html, table5_html

        tables += table2_html(con)  # models x estimators, overlap accuracy
        tables += table5_html(con)  # prompt styles x models, overlap accuracy
        from ingest.report.tables import injection_figure, sweep_tables_html

        tables += sweep_tables_html(con)  # ablations: Tables 3, 4 (and other axes), Table 9
        png = out / "mixture_injection.png"
        try:
            if injection_figure(con, png):
                images["mixture_injection"] = png
                data = base64.b64encode(png.read_bytes()).decode()
                tables += ("<h2>Injected domain (Table 9): estimated vs true share</h2>"
                           f"<img src='data:image/png;base64,{data}' alt='mixture_injection'>")
            else:
                skipped.append("mixture_injection: no data")
        except Exception as e:  # noqa: BLE001 - a missing mart leaves a note, not a crash
            skipped.append(f"mixture_injection: {str(e).splitlines()[0]}")
        from ingest.report.contamination import contamination_section

        c_html, c_images, c_skipped = contamination_section(con, out)  # benchmark contamination
        tables, skipped = tables + c_html, skipped + c_skipped
        images.update(c_images)
        from ingest.report.provenance import provenance_section

        p_html, p_skipped = provenance_section(con)  # licences of reproduced documents, personal data (masked)
        tables, skipped = tables + p_html, skipped + p_skipped
        from ingest.report.document_propensity import document_propensity_section

        d_html, d_skipped = document_propensity_section(con)  # for rightsholders: document sets
        tables, skipped = tables + d_html, skipped + d_skipped
        from ingest.explore.links import report_section

        tables += report_section(con, home, out)  # links into `lmaudit explore`
    finally:
        con.close()
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    page = f"""<!doctype html><html><head><meta charset="utf-8"><title>lmaudit report</title>
<style>body{{font-family:sans-serif;max-width:1200px;margin:2em auto;color:#222}}img{{max-width:100%}}
table{{border-collapse:collapse;font-size:12px}}td,th{{border:1px solid #ccc;padding:2px 6px}}</style></head>
<body><h1>lmaudit report</h1><p>Warehouse {html.escape(str(home))}, built {stamp}.</p>
{''.join(sections)}{tables}
<p><small>Skipped: {html.escape('; '.join(skipped)) or 'nothing'}</small></p></body></html>"""
    page_path = out / "report.html"
    page_path.write_text(page, encoding="utf-8")
    return Report(page_path, images, skipped)
