-- One row per (run, tracing pass) that the PropMe metrics are computed for; trace_id is NULL for a run
-- that no pass covers. A pass covers a run when it produced spans for one of the run's generations, or when
-- its corpus is the run's corpus (a traced generation without spans leaves no other mark in the lake).
with

params as (

    select * from {{ ref('int_propme_params') }}

),

runs as (

    select * from {{ ref('stg_runs') }}

),

generations as (

    select * from {{ ref('stg_generations') }}

),

spans as (

    select * from {{ ref('stg_spans') }}

),

trace_runs as (

    select * from {{ ref('stg_trace_runs') }}

),

run_sizes as (

    select
        run_id,
        count(*) as n_generations
    from generations
    group by run_id

),

span_traces as (

    select distinct
        generations.run_id,
        spans.trace_id
    from spans
    inner join generations on spans.generation_id = generations.generation_id

),

corpus_traces as (

    select
        runs.run_id,
        trace_runs.trace_id
    from runs
    inner join trace_runs on runs.corpus_id = trace_runs.corpus_id

),

matched as (

    select
        coalesce(span_traces.run_id, corpus_traces.run_id) as run_id,
        coalesce(span_traces.trace_id, corpus_traces.trace_id) as trace_id,
        case
            when span_traces.trace_id is not null and corpus_traces.trace_id is not null then 'spans_and_corpus'
            when span_traces.trace_id is not null then 'spans'
            else 'corpus'
        end as trace_matched_by
    from span_traces
    full outer join corpus_traces
        on
            span_traces.run_id = corpus_traces.run_id
            and span_traces.trace_id = corpus_traces.trace_id

),

final as (

    select
        runs.run_id,
        matched.trace_id,
        runs.model,
        runs.revision,
        runs.corpus_id,
        runs.setting,
        matched.trace_matched_by,
        trace_runs.corpus_id as trace_corpus_id,
        trace_runs.mode as trace_mode,
        trace_runs.index_dir as trace_index_dir,
        coalesce(run_sizes.n_generations, 0) as n_generations,
        case when runs.setting = params.capability_setting then 'capability' else 'propensity' end as setting_kind,
        case
            when list_contains(params.prompt_free_settings, runs.setting) then 'generation' else 'prompt'
        end as unit_kind
    from runs
    cross join params
    left join matched on runs.run_id = matched.run_id
    left join trace_runs on matched.trace_id = trace_runs.trace_id
    left join run_sizes on runs.run_id = run_sizes.run_id

)

select * from final
