-- One row per generation: the text checks of ingest/metrics/text.py (DuckDB functions, one definition each),
-- which need only the generation and its prompt (no tracing pass): blank, degenerate, code-like, targeted
-- extraction. Incremental (macros/propme_incremental.sql): a later build computes only generations whose text,
-- prompt or thresholds changed, or that are new; rows of vanished or changed inputs are deleted first.
{{ config(
    materialized='incremental',
    incremental_strategy='append',
    on_schema_change='fail',
    pre_hook="{{ propme_delete_stale(['generation_id'], propme_text_check_inputs()) }}"
) }}

with

params as (

    select * from {{ ref('int_propme_params') }}

),

inputs as (

    {{ propme_text_check_inputs() }}

),

todo as (

    select * from inputs
    {{ propme_rows_to_compute('inputs', ['generation_id']) }}

),

final as (

    select
        todo.generation_id,
        todo.true_continuation is not null as has_true_continuation,
        propme_is_blank(todo.text) as is_blank,
        propme_is_degenerate(
            todo.text, params.degenerate_max_compression, params.degenerate_max_letter_share
        ) as is_degenerate,
        propme_is_code_like(
            todo.text, params.code_min_lines, params.code_min_line_share, params.code_max_letter_share
        ) as is_code_like,
        case
            when todo.true_continuation is not null
                then propme_targeted_hit(todo.text, todo.true_continuation)
        end as targeted_hit,
        todo.input_hash
    from todo
    cross join params

)

select * from final
