-- One row per generation: the text checks of ingest/metrics/text.py (DuckDB functions, one definition each),
-- which need only the generation and its prompt (no tracing pass): blank, degenerate, code-like, targeted
-- extraction.
with

params as (

    select * from {{ ref('int_propme_params') }}

),

generations as (

    select * from {{ ref('stg_generations') }}

),

prompts as (

    select * from {{ ref('stg_prompts') }}

),

final as (

    select
        generations.generation_id,
        prompts.true_continuation is not null as has_true_continuation,
        propme_is_blank(generations.text) as is_blank,
        propme_is_degenerate(
            generations.text, params.degenerate_max_compression, params.degenerate_max_letter_share
        ) as is_degenerate,
        propme_is_code_like(
            generations.text, params.code_min_lines, params.code_min_line_share, params.code_max_letter_share
        ) as is_code_like,
        case
            when prompts.true_continuation is not null
                then propme_targeted_hit(generations.text, prompts.true_continuation)
        end as targeted_hit
    from generations
    cross join params
    left join prompts on generations.prompt_id = prompts.prompt_id

)

select * from final
