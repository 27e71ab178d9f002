-- One row per (run whose prompts have text, tracing pass): how long the matches of its prompts themselves are
-- (prompts are not training text, so their matches are chance level) beside the run's own ALS and R20/R50.
with

params as (

    select * from {{ ref('int_propme_params') }}

),

run_traces as (

    select * from {{ ref('int_run_traces') }}

),

generations as (

    select * from {{ ref('stg_generations') }}

),

prompts as (

    select * from {{ ref('stg_prompts') }}

),

prompt_traces as (

    select * from {{ ref('int_prompt_traces') }}

),

setting_metrics as (

    select * from {{ ref('fct_setting_metrics') }}

),

run_prompts as (

    select distinct
        generations.run_id,
        generations.prompt_id
    from generations
    inner join prompts on generations.prompt_id = prompts.prompt_id
    where prompts.text is not null and prompts.text <> ''

),

prompt_stats as (

    select
        run_traces.run_id,
        run_traces.trace_id,
        count(*) as n_prompts,
        count(prompt_traces.prompt_id) as n_prompts_traced,
        avg(prompt_traces.longest_span) as prompt_als,
        max(prompt_traces.longest_span) as prompt_max_span,
        avg(cast(prompt_traces.longest_span >= params.mid_span_tokens as double)) as prompt_r20,
        avg(cast(prompt_traces.longest_span >= params.long_span_tokens as double)) as prompt_r50,
        avg(cast(prompt_traces.has_full_match as double)) as prompt_full_match_rate
    from run_traces
    cross join params
    inner join run_prompts on run_traces.run_id = run_prompts.run_id
    left join prompt_traces
        on
            run_prompts.prompt_id = prompt_traces.prompt_id
            and run_traces.trace_id = prompt_traces.trace_id
            and prompt_traces.kind = 'prompt'
    group by run_traces.run_id, run_traces.trace_id

),

run_metrics as (

    select
        run_id,
        trace_id,
        max(value) filter (where metric = 'als') as run_als,
        max(value) filter (where metric = 'r20') as run_r20,
        max(value) filter (where metric = 'r50') as run_r50
    from setting_metrics
    group by run_id, trace_id

),

final as (

    select
        run_traces.run_id,
        run_traces.trace_id,
        run_traces.model,
        {{ model_name('run_traces.model') }} as model_name,
        run_traces.corpus_id,
        run_traces.setting,
        prompt_stats.n_prompts,
        prompt_stats.n_prompts_traced,
        case when prompt_stats.n_prompts_traced > 0 then prompt_stats.prompt_als end as prompt_als,
        prompt_stats.prompt_max_span,
        case when prompt_stats.n_prompts_traced > 0 then prompt_stats.prompt_r20 end as prompt_r20,
        case when prompt_stats.n_prompts_traced > 0 then prompt_stats.prompt_r50 end as prompt_r50,
        case
            when prompt_stats.n_prompts_traced > 0 then prompt_stats.prompt_full_match_rate
        end as prompt_full_match_rate,
        run_metrics.run_als,
        run_metrics.run_r20,
        run_metrics.run_r50,
        case
            when prompt_stats.n_prompts_traced > 0 and run_metrics.run_als > 0
                then prompt_stats.prompt_als / run_metrics.run_als
        end as prompt_als_share,
        case
            when run_traces.trace_id is null then 'run not traced: run lmaudit trace --run ' || run_traces.run_id
            when prompt_stats.n_prompts_traced = 0
                then 'prompts not traced by this pass: run lmaudit trace --prompts ' || run_traces.setting
            when prompt_stats.n_prompts_traced < prompt_stats.n_prompts
                then
                    'partly traced: ' || prompt_stats.n_prompts_traced || ' of ' || prompt_stats.n_prompts
                    || ' prompts; re-run lmaudit trace --prompts ' || run_traces.setting
        end as null_reason,
        params.mid_span_tokens,
        params.long_span_tokens,
        params.params
    from run_traces
    cross join params
    inner join prompt_stats
        on run_traces.run_id = prompt_stats.run_id and run_traces.trace_id is not distinct from prompt_stats.trace_id
    left join run_metrics
        on run_traces.run_id = run_metrics.run_id and run_traces.trace_id is not distinct from run_metrics.trace_id

)

select * from final
