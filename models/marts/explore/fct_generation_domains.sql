-- One row per (generation, tracing pass) that the pass traced: the domain most of the documents retrieved for
-- the generation's spans carry (ties: the first by name; NULL when none carries one), for the explorer's
-- domain column and filter. The aggregate reads every retrieved document (20M rows at paper scale), so it runs
-- at build time, and incrementally (macros/propme_incremental.sql): only (generation, pass) pairs that are new
-- or were traced again are computed; rows of vanished or changed inputs are deleted first, so the table equals
-- a full refresh.
{{ config(
    materialized='incremental',
    incremental_strategy='append',
    on_schema_change='fail',
    pre_hook="{{ propme_delete_stale(['generation_id', 'trace_id'], explore_domain_inputs()) }}"
) }}

with

inputs as (

    {{ explore_domain_inputs() }}

),

todo as (

    select * from inputs
    {{ propme_rows_to_compute('inputs', ['generation_id', 'trace_id']) }}

),

spans as (

    select
        spans.span_id,
        spans.generation_id,
        spans.trace_id
    from {{ ref('stg_spans') }} as spans
    inner join todo on spans.generation_id = todo.generation_id and spans.trace_id = todo.trace_id

),

span_domains as (

    select
        spans.generation_id,
        spans.trace_id,
        docs.domain,
        count(*) as n
    from spans
    inner join {{ ref('stg_span_documents') }} as docs on spans.span_id = docs.span_id
    where docs.domain is not null
    group by spans.generation_id, spans.trace_id, docs.domain

),

top_domain as (

    select
        generation_id,
        trace_id,
        first(domain order by n desc, domain asc) as domain
    from span_domains
    group by generation_id, trace_id

),

final as (

    select
        todo.generation_id,
        todo.trace_id,
        top_domain.domain,
        todo.input_hash
    from todo
    left join top_domain on todo.generation_id = top_domain.generation_id and todo.trace_id = top_domain.trace_id

)

select * from final
