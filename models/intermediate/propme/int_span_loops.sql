-- One row per span of at least loop_min_tokens tokens: is it a repetition loop (ingest/metrics/text.py)?
-- The ORDER BY is for speed, not meaning: after the filter, DuckDB hands a Python function only the few
-- selected rows of each vector (~60 of 2048); sorting makes full batches of similar lengths (~3x faster).
-- Incremental (macros/propme_incremental.sql): a later build checks only new or changed spans (or all of them
-- after a loop threshold changed); rows of vanished or changed spans are deleted first.
{{ config(
    materialized='incremental',
    incremental_strategy='append',
    on_schema_change='fail',
    pre_hook="{{ propme_delete_stale(['span_id'], propme_span_loop_inputs()) }}"
) }}

with

params as (

    select * from {{ ref('int_propme_params') }}

),

inputs as (

    {{ propme_span_loop_inputs() }}

),

long_spans as (

    select * from inputs
    {{ propme_rows_to_compute('inputs', ['span_id']) }}
    order by length

),

final as (

    select
        long_spans.span_id,
        long_spans.trace_id,
        long_spans.generation_id,
        long_spans.length,
        propme_is_loop(
            long_spans.text, params.loop_min_share, params.loop_max_period, params.loop_min_repeats
        ) as is_loop,
        long_spans.input_hash
    from long_spans
    cross join params

)

select * from final
