-- One row per (lake partition, generation, tracing pass): the span facts of a generation that one partition of the
-- lake's spans holds (counts, longest spans, documents, near-verbatim recall, its longest long span).
-- A view, never read whole: int_generation_span_facts reads it one lake_partition at a time. DuckDB pushes that
-- filter down to both Parquet scans, which then open one file each, so the build holds one partition's spans and
-- documents at a time instead of the lake's (BENCHMARKS.md "The generation facts one lake partition at a time":
-- at 16x paper scale the aggregate over all 80M spans and 324M document rows did not reliably fit a 3.4 GB DuckDB
-- budget; one partition at a time it peaked under 1 GB). A tracing batch writes a span and its documents under
-- one partition name, so joining them within a partition loses nothing. int_generation_facts combines the
-- partitions of a generation (normally one).
-- spans and loop_spans are read twice (span facts, longest long span) and stay unmaterialized: a materialized
-- CTE would be computed whole before the partition filter could reach it.
{{ config(materialized='view') }}

with

params as (

    select * from {{ ref('int_propme_params') }}

),

spans as not materialized (

    select * from {{ ref('stg_spans') }}

),

span_documents as (

    select * from {{ ref('stg_span_documents') }}

),

loop_spans as not materialized (

    select * from {{ ref('int_span_loops') }}

),

span_docs as (

    select
        lake_partition,
        span_id,
        count(*) as n_docs,
        count(nv_recall) as n_nv_docs,
        coalesce(sum(nv_recall), 0) as nv_sum,
        coalesce(bool_or(match_tier = 'exact_full_raw'), false) as has_full_raw,
        coalesce(bool_or(match_tier in ('exact_full_raw', 'exact_full_normalized')), false) as has_full_normalized
    from span_documents
    group by lake_partition, span_id

),

span_facts as (

    select
        spans.lake_partition,
        spans.span_id,
        spans.trace_id,
        spans.generation_id,
        spans.length,
        spans.is_full,
        coalesce(loop_spans.is_loop, false) as is_loop,
        spans.length >= params.long_span_tokens and not coalesce(loop_spans.is_loop, false) as is_long_nonloop,
        coalesce(span_docs.n_docs, 0) as n_docs,
        coalesce(span_docs.n_nv_docs, 0) as n_nv_docs,
        coalesce(span_docs.nv_sum, 0) as nv_sum,
        coalesce(span_docs.has_full_raw, false) as has_full_raw,
        coalesce(span_docs.has_full_normalized, false) as has_full_normalized
    from spans
    cross join params
    left join loop_spans on spans.span_id = loop_spans.span_id
    left join span_docs
        on spans.lake_partition = span_docs.lake_partition and spans.span_id = span_docs.span_id

),

generation_spans as (

    select
        span_facts.lake_partition,
        span_facts.generation_id,
        span_facts.trace_id,
        count(*) as n_spans,
        max(span_facts.length) as longest_span,
        max(span_facts.length) filter (where not span_facts.is_loop) as longest_nonloop_span,
        count(*) filter (where span_facts.is_loop) as n_loop_spans,
        count(*) filter (where span_facts.length >= params.long_span_tokens) as n_long_spans,
        count(*) filter (where span_facts.is_long_nonloop) as n_long_nonloop_spans,
        sum(span_facts.n_docs) as n_docs,
        sum(span_facts.n_nv_docs) as n_nv_docs,
        sum(span_facts.nv_sum) as nv_sum,
        coalesce(sum(span_facts.n_nv_docs) filter (where span_facts.is_long_nonloop), 0) as n_nv_docs_long,
        coalesce(sum(span_facts.nv_sum) filter (where span_facts.is_long_nonloop), 0) as nv_sum_long,
        bool_or(span_facts.has_full_raw) as full_match_raw,
        bool_or(span_facts.has_full_normalized) as full_match_normalized
    from span_facts
    cross join params
    group by span_facts.lake_partition, span_facts.generation_id, span_facts.trace_id

),

long_loop_spans as (

    select
        loop_spans.span_id,
        loop_spans.is_loop
    from loop_spans
    cross join params
    where loop_spans.length >= params.long_span_tokens

),

longest_long_span as (

    select
        spans.lake_partition,
        spans.generation_id,
        spans.trace_id,
        spans.span_id,
        spans.length,
        spans.start_tok
    from spans
    cross join params
    left join long_loop_spans on spans.span_id = long_loop_spans.span_id
    where spans.length >= params.long_span_tokens and not coalesce(long_loop_spans.is_loop, false)
    qualify row_number() over (
        partition by spans.lake_partition, spans.generation_id, spans.trace_id
        order by spans.length desc, spans.start_tok asc, spans.span_id asc
    ) = 1

),

final as (

    select
        generation_spans.*,
        longest_long_span.span_id as longest_long_span_id,
        longest_long_span.length as longest_long_span_length,
        longest_long_span.start_tok as longest_long_span_start_tok
    from generation_spans
    left join longest_long_span
        on
            generation_spans.lake_partition = longest_long_span.lake_partition
            and generation_spans.generation_id = longest_long_span.generation_id
            and generation_spans.trace_id = longest_long_span.trace_id

)

select * from final
