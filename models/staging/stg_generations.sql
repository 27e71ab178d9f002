with

source as (

    select * from {{ source('lake', 'generations') }}

),

runs as (

    select * from {{ source('lake', 'runs') }}

),

final as (

    select
        cast(generation_id as varchar) as generation_id,
        cast(run_id as varchar) as run_id,
        cast(prompt_id as varchar) as prompt_id,
        cast(sample_idx as integer) as sample_idx,
        cast(seed as bigint) as seed,
        cast(text as varchar) as text,
        cast(n_tokens as integer) as n_tokens,
        cast(finish_reason as varchar) as finish_reason
    from source
    -- the runs row is written last and commits a run: generations left by a step that died before it are
    -- not visible (the step's re-run rewrites them with the run)
    where run_id in (select runs.run_id from runs)

)

select * from final
