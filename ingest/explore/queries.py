"""The explorer's queries: runs with their headline metrics, a filtered, sorted page of generations, one
generation with its spans, one span's documents.

Everything is read from the built warehouse through one read-only DuckDB connection that can read only the
lake (as `lmaudit sql`): per-generation facts come from `int_generation_facts` (the same definitions as the
metrics: longest span, full match, near-verbatim recall in index tokens), headline numbers from
`fct_setting_metrics`. At start-up one query copies the summary row per generation that the build wrote
(`fct_explore_generations`: display order, run, facts, top domain of the retrieved documents, preview; at
paper scale 200,000 rows) into a temporary table; nothing is aggregated over spans or documents at start
(only in a warehouse built without that mart, or whose lake changed since the build: an import or a trace with
no build since; those get the same rows the slow way). Each page of the
generations table is then a `limit/offset` query on it, so no request ever returns more than one page.
Spans and documents are read per generation / per span.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

from ingest.errors import UserError
from ingest.explore.spans import locate_spans, segments, window_match

HEADLINE = ("fmr", "fmr20", "als", "nvr", "r50")
# sortable columns of the generations table (name -> SQL expression on explore_generations)
SORTS = {"position": "ordinal", "longest_span": "longest_span", "nv_recall": "nv_recall", "n_spans": "n_spans",
         "n_tokens": "n_tokens", "full_match": "full_match", "domain": "domain", "setting": "setting",
         "run_id": "run_id"}
MAX_PAGE = 500
# generations with a span whose retrieved documents include one of the set's (traced against the set's corpus)
DOCUMENT_SET_FILTER = """generation_id in (
    select spans.generation_id
    from stg_spans as spans
    inner join stg_span_documents as docs on spans.span_id = docs.span_id
    inner join stg_trace_runs as traces on spans.trace_id = traces.trace_id
    inner join stg_document_sets as sets
        on docs.doc_ix = sets.doc_ix and docs.shard = sets.shard and traces.corpus_id = sets.corpus_id
    where sets.document_set = ?)"""
MAX_PAGE_NUMBER = 10**9  # pages past the last one answer zero rows; past this one, a 400

SUMMARY_SQL = """
create temp table explore_generations as
select * from fct_explore_generations
"""

# The mart is what the last build saw; the rest of the explorer (runs, spans, documents) reads the lake's staging views
# live, and before the mart the generations and their domains were aggregated live at start too. So the mart is used
# only while it still matches the lake: the same generations (ids, runs, prompts, samples, models, settings) and,
# for the domains, the same traced (pass, generation, text hash) rows as fct_generation_domains' input_hash
# (macros/explore_domain_inputs.sql, propme_input_hash). Ids and hashes only, no text: the generations part is
# ~20 ms at 200,000 generations; the traced part computes that md5 per traced row, ~0.25-0.4 s wall at 400,000 rows
# measured under load ~45 on 2 cores (less on an idle machine). A text re-imported under the same ids with no build
# since keeps the build's preview (its facts, from int_generation_facts, are the build's in either case).
MART_CURRENT_SQL = """
with live as (
    select count(*) as n,
           coalesce(sum(hash(g.generation_id, g.run_id, g.prompt_id, g.sample_idx, runs.model, runs.setting)), 0) as h
    from stg_generations as g
    inner join stg_runs as runs on g.run_id = runs.run_id
),
built as (
    select count(*) as n, coalesce(sum(hash(generation_id, run_id, prompt_id, sample_idx, model, setting)), 0) as h
    from explore_generations
),
live_traced as (
    select count(*) as n,
           coalesce(sum(hash(md5(concat_ws('|', coalesce(cast(trace_id as varchar), 'null'),
                                           coalesce(cast(generation_id as varchar), 'null'),
                                           coalesce(cast(text_hash as varchar), 'null'))))), 0) as h
    from stg_traced_generations
),
built_domains as (
    select count(*) as n, coalesce(sum(hash(input_hash)), 0) as h
    from fct_generation_domains
)
select live.n = built.n and live.h = built.h and live_traced.n = built_domains.n and live_traced.h = built_domains.h
from live, built, live_traced, built_domains
"""

# A warehouse built before the mart existed (or a build that selected only some marts): the same rows aggregated
# at start, as the explorer did before issue 32 (seconds at paper scale; a full `lmaudit build` writes the mart).
SUMMARY_AT_START_SQL = """
create temp table explore_generations as
with facts as (
    select *
    from int_generation_facts
    qualify row_number() over (partition by generation_id order by is_traced desc nulls last, trace_id) = 1
),
span_domains as (
    select spans.generation_id, spans.trace_id, docs.domain, count(*) as n
    from stg_spans as spans
    inner join stg_span_documents as docs on spans.span_id = docs.span_id
    where docs.domain is not null
    group by all
),
top_domain as (
    select generation_id, trace_id, first(domain order by n desc, domain) as domain
    from span_domains
    group by all
),
runs as (select run_id, model, setting, purpose from stg_runs)
select
    row_number() over (order by runs.run_id, generations.prompt_id nulls first, generations.sample_idx,
                       generations.generation_id) - 1 as ordinal,
    generations.generation_id,
    generations.run_id,
    runs.model,
    runs.setting,
    generations.prompt_id,
    generations.sample_idx,
    facts.trace_id,
    coalesce(facts.is_traced, false) as is_traced,
    facts.n_tokens,
    facts.n_spans,
    facts.longest_span,
    case when facts.n_nv_docs > 0 then facts.nv_sum / facts.n_nv_docs end as nv_recall,
    facts.full_match_normalized as full_match,
    facts.full_match_raw,
    facts.is_blank,
    top_domain.domain,
    left(generations.text, 160) as preview
from stg_generations as generations
inner join runs on generations.run_id = runs.run_id
left join facts on generations.generation_id = facts.generation_id
left join top_domain on facts.generation_id = top_domain.generation_id and facts.trace_id = top_domain.trace_id
"""

RUNS_SQL = """
with counts as (
    select run_id, count(*) as n_generations, count(*) filter (where is_traced) as n_traced
    from explore_generations group by run_id
),
metrics as (
    select run_id, metric, value, ci_low, ci_high
    from fct_setting_metrics where metric in ({metrics})
    qualify row_number() over (partition by run_id, metric order by trace_id nulls last) = 1
)
select runs.run_id, runs.model, runs.setting, runs.purpose, coalesce(counts.n_generations, 0) as n_generations,
       coalesce(counts.n_traced, 0) as n_traced,
       {pivot}
from stg_runs as runs
left join counts on runs.run_id = counts.run_id
left join metrics on runs.run_id = metrics.run_id
group by all
order by runs.model, runs.setting, runs.run_id
"""


@dataclass(frozen=True)
class GenQuery:
    """One request for the generations table: filters, a sort and a page."""

    run_ids: tuple[str, ...] = ()
    setting: str | None = None
    domain: str | None = None
    full_match: bool | None = None
    document_set: str | None = None  # generations with a span from a document of this set (lmaudit audit documents)
    min_longest: int | None = None
    min_nv_recall: float | None = None
    sort: str = "longest_span"
    descending: bool = True
    page: int = 0
    size: int = 50

    def __post_init__(self):
        if self.sort not in SORTS:
            raise UserError(f"unknown sort {self.sort!r}; use one of {', '.join(SORTS)}")
        if not 1 <= self.size <= MAX_PAGE:
            raise UserError(f"page size must be 1..{MAX_PAGE}, not {self.size}")
        if not 0 <= self.page <= MAX_PAGE_NUMBER:
            # beyond it, page * size no longer fits DuckDB's offset (the request got no answer at all)
            raise UserError(f"page must be 0..{MAX_PAGE_NUMBER}, not {self.page}")
        if self.min_longest is not None and not -2**63 <= self.min_longest < 2**63:
            raise UserError(f"min_longest must be a whole number below 2**63, not {self.min_longest}")


@dataclass
class Page:
    rows: list[dict]
    total: int
    page: int
    size: int
    seconds: float = 0.0
    extra: dict = field(default_factory=dict)


def _dicts(cur) -> list[dict]:
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r)) for r in cur.fetchall()]


def open_warehouse(home: Path):
    """A read-only connection to the built warehouse that reads no file outside the lake (as `lmaudit sql`),
    and may create temporary tables (kept in memory, never in the warehouse file)."""
    import duckdb

    from ingest.warehouse_db import connect_read_only

    con = connect_read_only(home)  # staging views re-pointed at this warehouse's lake if it was moved or copied
    if con.execute("select current_setting('lock_configuration')").fetchone()[0]:
        # the file is already open in this process (DuckDB shares one instance per file), locked down by
        # another explorer or `open_read_only`: it stays as locked as that left it
        if con.execute("select current_setting('enable_external_access')").fetchone()[0]:
            con.close()
            raise duckdb.InvalidInputException("warehouse already open with external access on")
        return con
    lake = str((home / "lake").resolve()) + "/"
    con.execute("set allowed_directories = [?]", [lake])
    con.execute("set enable_external_access = false")
    con.execute("set lock_configuration = true")
    return con


class Explorer:
    """All queries of the explorer over one connection (DuckDB connections are not for concurrent use: a
    lock serialises the server's threads)."""

    def __init__(self, home: Path, run_ids: tuple[str, ...] = ()):
        import time

        import duckdb

        self.home = home
        self.con = open_warehouse(home)
        self.lock = threading.Lock()
        start = time.perf_counter()
        try:
            try:
                self.con.execute(SUMMARY_SQL)
                self.summary_source = "fct_explore_generations"
            except duckdb.CatalogException as e:
                if "fct_explore_generations" not in str(e):
                    raise
                self.con.execute(SUMMARY_AT_START_SQL)
                self.summary_source = "aggregated at start"
            else:
                try:
                    (current,) = self.con.execute(MART_CURRENT_SQL).fetchone()
                except duckdb.CatalogException:  # a build that selected the mart but not fct_generation_domains
                    current = False
                if not current:
                    self.con.execute("drop table explore_generations")
                    self.con.execute(SUMMARY_AT_START_SQL)
                    self.summary_source = "aggregated at start (the lake changed since the build)"
        except duckdb.CatalogException as e:
            self.con.close()
            raise UserError(f"the warehouse has no trace marts yet ({str(e).splitlines()[0]}); run `lmaudit build` "
                            "first") from None
        except duckdb.PermissionException as e:  # a view still names another folder's lake
            from ingest.warehouse_db import stale_lake_message

            self.con.close()
            raise UserError(stale_lake_message(str(e), home) or f"the explorer reads only the warehouse's lake: "
                            f"{str(e).splitlines()[0]}") from None
        if run_ids:
            known = {r for (r,) in self.con.execute("select run_id from stg_runs").fetchall()}
            missing = [r for r in run_ids if r not in known]
            if missing:
                self.con.close()
                raise UserError(f"unknown run(s) {', '.join(missing)}; see `lmaudit sql \"select run_id from "
                                "stg_runs\"`")
            self.con.execute("delete from explore_generations where not list_contains(?, run_id)", [list(run_ids)])
        self.run_ids = run_ids
        self.startup_seconds = time.perf_counter() - start

    def close(self) -> None:
        self.con.close()

    def _q(self, sql: str, params=()) -> list[dict]:
        with self.lock:
            return _dicts(self.con.execute(sql, list(params)))

    # -- runs ---------------------------------------------------------------------------------------
    def runs(self) -> list[dict]:
        pivot = ", ".join(f"max(metrics.value) filter (where metrics.metric = '{m}') as {m}" for m in HEADLINE)
        sql = RUNS_SQL.format(metrics=", ".join(f"'{m}'" for m in HEADLINE), pivot=pivot)
        rows = self._q(sql)
        if self.run_ids:
            rows = [r for r in rows if r["run_id"] in self.run_ids]
        return rows

    def facets(self) -> dict:
        """Values for the filter menus."""
        settings = [r["setting"] for r in self._q("select distinct setting from explore_generations order by 1")]
        domains = [r["domain"] for r in self._q("select distinct domain from explore_generations "
                                                 "where domain is not null order by 1")]
        return {"settings": settings, "domains": domains, "document_sets": self._document_sets()}

    def _document_sets(self) -> list[str]:
        """Names of the document sets the marts know (none in a warehouse built before they existed)."""
        import duckdb

        try:
            return [r["document_set"] for r in self._q("select distinct document_set from stg_document_sets "
                                                        "order by 1")]
        except duckdb.Error:
            return []

    # -- the generations table ---------------------------------------------------------------------
    def generations(self, q: GenQuery) -> Page:
        import time

        where, params = ["true"], []
        if q.run_ids:
            where.append("list_contains(?, run_id)")
            params.append(list(q.run_ids))
        if q.setting:
            where.append("setting = ?")
            params.append(q.setting)
        if q.domain:
            where.append("domain = ?")
            params.append(q.domain)
        if q.full_match is not None:
            where.append("coalesce(full_match, false) = ?")
            params.append(q.full_match)
        if q.document_set:
            if q.document_set not in self._document_sets():
                raise UserError(f"unknown document set {q.document_set!r}; name one with `lmaudit audit documents`")
            where.append(DOCUMENT_SET_FILTER)
            params.append(q.document_set)
        if q.min_longest is not None:
            where.append("longest_span >= ?")
            params.append(q.min_longest)
        if q.min_nv_recall is not None:
            where.append("nv_recall >= ?")
            params.append(q.min_nv_recall)
        cond = " and ".join(where)
        order = f"{SORTS[q.sort]} {'desc' if q.descending else 'asc'} nulls last, ordinal"
        start = time.perf_counter()
        with self.lock:
            (total,) = self.con.execute(f"select count(*) from explore_generations where {cond}", params).fetchone()
            rows = _dicts(self.con.execute(
                f"select * from explore_generations where {cond} order by {order} limit ? offset ?",
                [*params, q.size, q.page * q.size]))
        return Page(rows, total, q.page, q.size, time.perf_counter() - start)

    # -- one generation -----------------------------------------------------------------------------
    def generation(self, generation_id: str) -> dict | None:
        found = self._q("select * from explore_generations where generation_id = ?", [generation_id])
        if not found:
            return None
        g = found[0]
        detail = self._q("""
            select generations.text, prompts.text as prompt, prompts.true_continuation, prompts.source_doc
            from stg_generations as generations
            left join stg_prompts as prompts on generations.prompt_id = prompts.prompt_id
            where generations.generation_id = ?""", [generation_id])[0]
        g.update(detail)
        spans = self._spans(generation_id, g["trace_id"]) if g["trace_id"] else []
        placed = locate_spans(g["text"], spans)
        for s in spans:
            se = placed.get(s["span_id"])
            s["char_start"], s["char_end"] = (se if se else (None, None))
        g["spans"] = spans
        g["segments"] = segments(g["text"], placed)
        return g

    def _spans(self, generation_id: str, trace_id: str) -> list[dict]:
        return self._q("""
            with spans as (
                select * from stg_spans where generation_id = ? and trace_id = ?
            ),
            docs as (
                select span_id, count(*) as n_docs, max(nv_recall) as best_nv_recall,
                       bool_or(match_tier in ('exact_full_raw', 'exact_full_normalized')) as full_doc
                from stg_span_documents where span_id in (select span_id from spans) group by span_id
            )
            select spans.span_id, spans.start_tok, spans.end_tok, spans.length, spans.count, spans.unigram_logprob,
                   spans.kept, spans.merged, spans.is_full, spans.text, coalesce(docs.n_docs, 0) as n_docs,
                   docs.best_nv_recall, counts.first50_count, counts.whole_count
            from spans
            left join docs on spans.span_id = docs.span_id
            left join stg_span_counts as counts on spans.span_id = counts.span_id
            order by spans.start_tok, spans.end_tok""", [generation_id, trace_id])

    # -- one span's documents -----------------------------------------------------------------------
    def span_documents(self, span_id: str) -> dict | None:
        span = self._q("select span_id, generation_id, length, count, text, is_full from stg_spans where span_id = ?",
                       [span_id])
        if not span:
            return None
        docs = self._q("""
            select shard, doc_ix, doc_id, source, domain, metadata, window_text, match_tier, nv_recall,
                   nv_matched_words, nv_generation_words, nv_document_words
            from stg_span_documents where span_id = ?
            order by nv_recall desc nulls last, shard, doc_ix""", [span_id])
        return {"span": span[0], "documents": with_windows(docs, span[0]["text"])}

    def documents_of_spans(self, span_ids: list[str]) -> dict[str, list[dict]]:
        """Documents of many spans at once (the static export writes a generation with all of them)."""
        if not span_ids:
            return {}
        rows = self._q("""
            select docs.span_id, spans.text as span_text, shard, doc_ix, doc_id, source, domain, metadata, window_text,
                   match_tier, nv_recall, nv_matched_words, nv_generation_words, nv_document_words
            from stg_span_documents as docs inner join stg_spans as spans on docs.span_id = spans.span_id
            where list_contains(?, docs.span_id)
            order by docs.span_id, nv_recall desc nulls last, shard, doc_ix""", [span_ids])
        out: dict[str, list[dict]] = {}
        for r in rows:
            out.setdefault(r.pop("span_id"), []).append(r)
        return {sid: with_windows(docs) for sid, docs in out.items()}


def with_windows(docs: list[dict], span_text: str | None = None) -> list[dict]:
    """Add each document's matched window (`match_start`, `match_end` in `window_text`); the span's text is
    `span_text` or each row's own `span_text` column."""
    for d in docs:
        at = window_match(d.get("window_text"), d.pop("span_text", span_text))
        d["match_start"], d["match_end"] = at if at else (None, None)
    return docs
