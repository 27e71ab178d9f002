-- One row per (run, tracing pass, prompt with a true continuation): its duplication bucket (how often the
-- source sequence, prompt + true continuation, occurs in the corpus) and its targeted-extraction numerator
-- and denominator (non-degenerate samples); `metric_key` = 'te@' || bucket feeds the bootstrap.
with

facts as (

    select * from {{ ref('int_generation_facts') }}

),

prompt_traces as (

    select * from {{ ref('int_prompt_traces') }}

),

per_prompt as (

    select
        run_id,
        trace_id,
        prompt_id,
        any_value(unit_id) as unit_id,
        any_value(unit_kind) as unit_kind,
        count(*) as n_gen,
        count(*) filter (where not is_degenerate) as n_ok,
        count(*) filter (where not is_degenerate and coalesce(targeted_hit, false)) as n_hits
    from facts
    where has_true_continuation and trace_id is not null and prompt_id is not null
    group by run_id, trace_id, prompt_id

),

bucketed as (

    select
        per_prompt.*,
        prompt_traces.full_count as source_count,
        case
            when prompt_traces.prompt_id is null then 'not_traced'
            when prompt_traces.full_count is null then 'not_found_whole'
            when prompt_traces.full_count <= 1 then 'once'
            when prompt_traces.full_count < 10 then '2-9'
            when prompt_traces.full_count < 100 then '10-99'
            else '100+'
        end as bucket
    from per_prompt
    left join prompt_traces
        on
            per_prompt.prompt_id = prompt_traces.prompt_id
            and per_prompt.trace_id = prompt_traces.trace_id
            and prompt_traces.kind = 'source'

),

final as (

    select
        run_id,
        trace_id,
        unit_id,
        unit_kind,
        prompt_id,
        source_count,
        bucket,
        'te@' || bucket as metric_key,
        cast(n_hits as double) as num,
        cast(n_ok as double) as den,
        n_gen as n_generations,
        cast(n_ok as bigint) as n_eligible
    from bucketed

)

select * from final
