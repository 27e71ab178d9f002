"""The report's provenance section: the licences of the training documents the model reproduces, the most
reproduced licensed documents, and the personal data in reproduced spans per run and setting
(fct_document_provenance, fct_reproduced_personal_data; docs/provenance.md). Personal data is shown only as
counts and masked examples (first 2 characters, ***, the kind), never in full. Empty when no generation
reproduces a training document, so a warehouse without traces shows nothing."""

from __future__ import annotations

import html
import re

from ingest.provenance.personal_data import mask
from ingest.report.plotting import query_rows

_MASKED = re.compile(r".{0,2}\*\*\*(email|phone|secret)", re.DOTALL)

LICENCE_SQL = """
select coalesce(licence, case when is_read then 'none found' else 'not read yet' end) as licence,
       count(*) as documents, sum(n_generations) as reproducing_generations, max(longest_span) as longest_span,
       string_agg(distinct licence_origin, ', ') as origin
from fct_document_provenance
group by 1
order by documents desc, licence
"""

TOP_SQL = """
select coalesce(doc_id, cast(doc_ix as varchar)) as document, coalesce(path, source) as path_or_source, repository,
       licence, n_runs, array_to_string(settings, ', ') as settings, n_generations, longest_span
from fct_document_provenance
where licence is not null
order by longest_span desc, n_generations desc, document
limit 15
"""

PERSONAL_SQL = """
select run_id, setting, max(n_generations) as generations, max(n_generations_reproducing) as reproducing,
       max(n_spans_scanned) || ' / ' || max(n_reproduced_spans) as spans_scanned,
       sum(n_generations_with) filter (where kind = 'email') as with_email,
       sum(n_generations_with) filter (where kind = 'phone') as with_phone,
       sum(n_generations_with) filter (where kind = 'secret') as with_key_or_token,
       sum(n_distinct_values) as distinct_values, flatten(list(examples order by kind)) as examples
from fct_reproduced_personal_data
group by run_id, trace_id, setting
order by run_id, trace_id
"""


def _html_table(rows: list[dict]) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in rows[0])
    body = "".join("<tr>" + "".join(f"<td>{'' if v is None else html.escape(str(v))}</td>" for v in r.values())
                   + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _masked(examples) -> str:
    """The mart's examples are masked when written (`jo***email`); anything else (a hand-edited lake) is masked
    here, so the report never shows a value in full."""
    out = []
    for e in examples or []:
        e = str(e)
        out.append(e if _MASKED.fullmatch(e) else mask(e, "value"))
    return ", ".join(out)


def provenance_section(con) -> tuple[str, list[str]]:
    """(HTML, skipped notes) of the section; nothing at all when no document is reproduced."""
    try:
        licences = query_rows(con, LICENCE_SQL)
        top = query_rows(con, TOP_SQL)
        personal = query_rows(con, PERSONAL_SQL)
    except Exception as e:  # noqa: BLE001 - the marts not built yet: a note, not a crash
        return "", [f"provenance: {str(e).splitlines()[0]}"]
    if not licences and not any(r["reproducing"] for r in personal):
        return "", []
    for r in personal:
        r["examples"] = _masked(r["examples"])
    parts = ["<h2>Provenance: licences of reproduced documents</h2>"]
    if licences:
        parts.append(_html_table(licences))
    if top:
        parts.append("<h3>Most reproduced licensed documents</h3>" + _html_table(top))
    if personal:
        parts.append("<h3>Personal data in reproduced spans (masked)</h3>" + _html_table(personal))
    parts.append("<p><small>reproduced: a span of at least var propme_mid_span_tokens index tokens found in the "
                 "document; licence: the metadata's licence field (SPDX), else the one found in the document's "
                 "text by <code>lmaudit provenance</code>; 'not read yet': run it. Personal data: e-mail addresses, "
                 "phone numbers, keys and tokens, shown masked (first 2 characters, ***, the kind).</small></p>")
    return "".join(parts), []
