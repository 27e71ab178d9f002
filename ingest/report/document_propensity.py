"""The report's section for rightsholders: per document set (`lmaudit audit documents`), how often each
propensity setting reproduces the set's text against the attack, with PM and its interval
(fct_document_set_propensity), and the set's most reproduced documents (fct_document_propensity).
Empty when no set was named, so a warehouse without one shows nothing (docs/rightsholders.md)."""

from __future__ import annotations

import html

from ingest.report.plotting import query_rows, setting_order

SET_SQL = """
select document_set, n_documents, propensity_setting as setting, metric, attack_run_id, attack_kind,
       hits_p, n_generations_p, f_p, f_p_ci_low, f_p_ci_high, hits_c, n_generations_c, f_c, f_c_ci_low, f_c_ci_high,
       pm, pm_ci_low, pm_ci_high, n_documents_reproduced, te_hits, te_generations, te, null_reason, selection
from fct_document_set_propensity
order by document_set, propensity_setting, metric
"""

TOP_DOCS_SQL = """
select document_set, doc_ix, coalesce(doc_id, source, 'doc:' || doc_ix) as document,
       sum(hits_p) filter (where metric = 'r20') as r20_generations,
       sum(hits_p) filter (where metric = 'r50') as r50_generations,
       sum(hits_p) filter (where metric = 'fmr') as full_matches,
       max(hits_c) filter (where metric = 'r50') as attack_r50_generations,
       max(te_hits) filter (where metric = 'r50') as te_hits,
       max(te_generations) filter (where metric = 'r50') as te_generations
from fct_document_propensity
group by document_set, doc_ix, coalesce(doc_id, source, 'doc:' || doc_ix)
having sum(hits_p) > 0 or max(hits_c) > 0
order by document_set, r50_generations desc, r20_generations desc, doc_ix
"""

TOP_N = 10
METRIC_ORDER = ("r20", "r50", "fmr")


def _pct(v) -> str:
    return "" if v is None else f"{100 * v:.1f}"


def _ci(lo, hi) -> str:
    return "" if lo is None or hi is None else f"[{_pct(lo)}, {_pct(hi)}]"


def _pm(r: dict) -> str:
    if r["pm"] is None:
        return ""
    ci = "" if r["pm_ci_low"] is None else f" [{r['pm_ci_low']:.2f}, {r['pm_ci_high']:.2f}]"
    return f"{r['pm']:.2f}{ci}"


def _table(head: list[str], body: list[list]) -> str:
    th = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    rows = "".join("<tr>" + "".join(f"<td>{html.escape('' if v is None else str(v))}</td>" for v in r) + "</tr>"
                   for r in body)
    return f"<table><thead><tr>{th}</tr></thead><tbody>{rows}</tbody></table>"


def set_tables(rows: list[dict], top: list[dict]) -> str:
    """One table per set (settings x metrics) and its most reproduced documents."""
    out = []
    for name in sorted({r["document_set"] for r in rows}):
        mine = [r for r in rows if r["document_set"] == name]
        first = mine[0]
        order = setting_order([r["setting"] for r in mine])
        mine.sort(key=lambda r: (order.index(r["setting"]), METRIC_ORDER.index(r["metric"])
                                 if r["metric"] in METRIC_ORDER else 9))
        attacks = sorted({f"{r['attack_run_id']} ({r['attack_kind']})" for r in mine if r["attack_run_id"]})
        te = next((r for r in mine if r["te_generations"]), None)
        te_share = "no share: see the note column" if te and te["te"] is None else \
            f"{_pct(te['te'])}%" if te else ""
        te_text = (f"; targeted extraction of the attack: {te['te_hits']} of {te['te_generations']} generations "
                   f"({te_share})") if te else ""
        out.append(f"<h3>{html.escape(name)}: {first['n_documents']} documents "
                   f"<small>({html.escape(first['selection'] or '')})</small></h3>"
                   f"<p><small>attack: {html.escape(', '.join(attacks) or 'none')}{html.escape(te_text)}</small></p>")
        out.append(_table(
            ["setting", "metric", "generations (f_p)", "f_p %", "95% CI", "attack generations (f_c)", "f_c %",
             "95% CI", "PM [95% CI]", "documents reproduced", "note"],
            [[r["setting"], r["metric"], f"{r['hits_p']} / {r['n_generations_p']}", _pct(r["f_p"]),
              _ci(r["f_p_ci_low"], r["f_p_ci_high"]),
              "" if r["hits_c"] is None else f"{r['hits_c']} / {r['n_generations_c']}", _pct(r["f_c"]),
              _ci(r["f_c_ci_low"], r["f_c_ci_high"]), _pm(r), r["n_documents_reproduced"], r["null_reason"] or ""]
             for r in mine]))
        docs = [d for d in top if d["document_set"] == name][:TOP_N]
        if docs:
            out.append(f"<p>Most reproduced documents of {html.escape(name)} (all propensity runs):</p>")
            out.append(_table(["document", "doc_ix", "r20 generations", "r50 generations", "full matches",
                               "attack r50 generations", "targeted extraction"],
                              [[d["document"], d["doc_ix"], d["r20_generations"], d["r50_generations"],
                                d["full_matches"], d["attack_r50_generations"],
                                f"{d['te_hits']} / {d['te_generations']}" if d["te_generations"] else ""]
                               for d in docs]))
    return "".join(out)


def document_propensity_section(con) -> tuple[str, list[str]]:
    """(HTML, skipped notes); nothing at all when no document set was named."""
    try:
        rows = query_rows(con, SET_SQL)
        top = query_rows(con, TOP_DOCS_SQL)
    except Exception as e:  # noqa: BLE001 - the marts not built yet: a note, not a crash
        return "", [f"document sets: {str(e).splitlines()[0]}"]
    if not rows:
        return "", []
    note = ("<p><small>For each named set of training documents: f_p, the share of a propensity run's "
            "non-degenerate generations that reproduce a span of &ge; 20 (r20) / &ge; 50 (r50) tokens of one of "
            "the set's documents or match one in full (fmr); f_c, the same share under the prefix attack (the "
            "set's own prefixes when built and run, else the corpus-wide prefix run); PM = f_p / (f_p + f_c), "
            "0.5 = as often in ordinary use as under attack. Percentile bootstrap intervals over prompts "
            "(generations for prompt-free settings).</small></p>")
    return f"<h2>For rightsholders: document sets</h2>{note}{set_tables(rows, top)}", []
