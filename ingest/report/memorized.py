"""What a model reproduced, by where the text comes from: the demo's answer to "is it all the canary?".

A sandbox has three kinds of training text, and they come back very differently:
- the planted canary: identical copies put in on purpose, a known answer (the tiny sandbox has 200);
- licence text: natural copies, because many packages ship the same MIT/BSD/Apache text (6-9 copies of each
  in the tiny corpus, ~2-4 % of the canary's);
- ordinary text (code, documentation, headers), seen about once.
Putting them side by side, with how often the longest reproduced span occurs in the corpus, shows a reader
which long matches are the planted answer and what real text the model gives back (a licence fragment such
as "WITHOUT WARRANTY OF ANY KIND"): duplication is what makes text come back verbatim.
A span's source is the domain most of its retrieved training documents carry (as int_long_match_categories);
among spans of equal length the most copied one is shown (then by text), so the table is deterministic.
Repetition loops (e.g. a row of `* * * *` from a licence banner) and blank outputs are left out, as in
every PropMe metric: they are not reproduced content. Rendering is the CLI's job; this module only reads.
"""

from __future__ import annotations

from dataclasses import dataclass

LONG_SPAN_TOKENS = 20  # PropMe's mid-length span: the threshold of a "long match" in the marts
ORIGINS = {"canary": "planted", "boilerplate": "natural copies"}
ORDINARY = "seen ~once"

_SQL = """
with top_domain as (
    select span_id, lower(domain) as domain
    from stg_span_documents
    where domain is not null and domain <> ''
    group by span_id, lower(domain)
    qualify row_number() over (partition by span_id order by count(*) desc, lower(domain) asc) = 1
)
select
    d.domain,
    count(distinct f.generation_id) filter (where s.length >= ?) as n_long,
    max(s.length) as longest,
    first(s.count order by s.length desc, s.count desc, s.text asc, f.generation_id asc) as copies,
    first(f.setting order by s.length desc, s.count desc, s.text asc, f.generation_id asc) as setting,
    first(s.text order by s.length desc, s.count desc, s.text asc, f.generation_id asc) as text
from int_generation_facts as f
inner join stg_spans as s on f.generation_id = s.generation_id and f.trace_id = s.trace_id
inner join top_domain as d on s.span_id = d.span_id
left join int_span_loops as l on s.span_id = l.span_id
where f.is_traced and not f.is_degenerate and not coalesce(f.is_blank, false) and not coalesce(l.is_loop, false)
    and f.run_id in ({runs})
group by d.domain
order by longest desc, d.domain asc
"""


@dataclass(frozen=True)
class MemorizedSource:
    """One source domain: generations with a long span from it, its longest span and that span's copies."""

    domain: str
    origin: str  # planted / natural copies / seen ~once
    n_long: int  # generations with a span of >= LONG_SPAN_TOKENS tokens from this domain
    longest: int  # tokens
    copies: int | None  # occurrences of the longest span in the training corpus
    setting: str | None  # setting of the generation with the longest span
    text: str


def memorized_by_source(con, run_ids: list[str]) -> list[MemorizedSource]:
    """One row per source domain over the traced, non-degenerate generations of the PropMe runs `run_ids`."""
    if not run_ids:
        return []
    rows = con.execute(_SQL.format(runs=", ".join("?" for _ in run_ids)), [LONG_SPAN_TOKENS, *run_ids]).fetchall()
    return [MemorizedSource(domain, ORIGINS.get(domain, ORDINARY), int(n or 0), int(longest), copies, setting,
                            text or "")
            for domain, n, longest, copies, setting, text in rows]
