-- One row per (propme run, tracing pass) that the PropMe metrics are computed for; trace_id is NULL for a
-- run that no pass covers. A pass covers a run when `traced_generations` holds one of the run's generations
-- with the hash of its current text: a trace computed from an older text of the same generation id (a
-- re-imported or regenerated run) covers nothing. Runs whose purpose is not propme (e.g. the neutral run of
-- a mixture estimate) are left out of every PropMe mart.
with

runs as (

    select * from {{ ref('stg_runs') }}

),

generations as (

    select * from {{ ref('stg_generations') }}

),

traced as (

    select * from {{ ref('stg_traced_generations') }}

),

trace_runs as (

    select * from {{ ref('stg_trace_runs') }}

),

params as (

    select * from {{ ref('int_propme_params') }}

),

propme_runs as (

    select *
    from runs
    where purpose = 'propme'

),

run_sizes as (

    select
        run_id,
        count(*) as n_generations
    from generations
    group by run_id

),

coverage as (

    select
        generations.run_id,
        traced.trace_id,
        count(*) filter (where traced.text_hash = md5(generations.text)) as n_traced_generations,
        count(*) filter (where traced.text_hash != md5(generations.text)) as n_stale_generations
    from traced
    inner join generations on traced.generation_id = generations.generation_id
    group by generations.run_id, traced.trace_id

),

stale as (

    select
        run_id,
        max(n_stale_generations) as n_stale_generations
    from coverage
    group by run_id

),

final as (

    select
        propme_runs.run_id,
        coverage.trace_id,
        propme_runs.model,
        propme_runs.revision,
        propme_runs.corpus_id,
        propme_runs.setting,
        trace_runs.corpus_id as trace_corpus_id,
        trace_runs.mode as trace_mode,
        trace_runs.index_dir as trace_index_dir,
        coalesce(run_sizes.n_generations, 0) as n_generations,
        coalesce(coverage.n_traced_generations, 0) as n_traced_generations,
        coalesce(stale.n_stale_generations, 0) as n_stale_generations,
        case
            when propme_runs.setting = params.capability_setting then 'capability' else 'propensity'
        end as setting_kind,
        case
            when list_contains(params.prompt_free_settings, propme_runs.setting) then 'generation' else 'prompt'
        end as unit_kind
    from propme_runs
    cross join params
    left join coverage
        on
            propme_runs.run_id = coverage.run_id
            and coverage.n_traced_generations > 0
    left join trace_runs on coverage.trace_id = trace_runs.trace_id
    left join run_sizes on propme_runs.run_id = run_sizes.run_id
    left join stale on propme_runs.run_id = stale.run_id

)

select * from final
