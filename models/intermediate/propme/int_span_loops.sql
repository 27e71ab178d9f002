-- One row per span of at least loop_min_tokens tokens: is it a repetition loop (ingest/metrics/text.py)?
-- The ORDER BY is for speed, not meaning: after the filter, DuckDB hands a Python function only the few
-- selected rows of each vector (~60 of 2048); sorting makes full batches of similar lengths (~3x faster).
with

params as (

    select * from {{ ref('int_propme_params') }}

),

spans as (

    select * from {{ ref('stg_spans') }}

),

long_spans as (

    select
        spans.span_id,
        spans.trace_id,
        spans.generation_id,
        spans.length,
        spans.text
    from spans
    cross join params
    where spans.length >= params.loop_min_tokens
    order by spans.length

),

final as (

    select
        long_spans.span_id,
        long_spans.trace_id,
        long_spans.generation_id,
        long_spans.length,
        propme_is_loop(
            long_spans.text, params.loop_min_share, params.loop_max_period, params.loop_min_repeats
        ) as is_loop
    from long_spans
    cross join params

)

select * from final
