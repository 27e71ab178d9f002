-- Pairs of runs that share prompts (same setting, same tracing pass): the inputs of the paired bootstrap
-- of `fct_run_differences`. run_a < run_b; only prompted settings (prompt-free units are generations).
with

params as (

    select * from {{ ref('int_propme_params') }}

),

run_traces as (

    select * from {{ ref('int_run_traces') }}

),

metric_units as (

    select * from {{ ref('int_metric_units') }}

),

units as (

    select distinct
        run_id,
        trace_id,
        unit_id
    from metric_units
    where unit_kind = 'prompt'

),

unit_counts as (

    select
        run_id,
        trace_id,
        count(*) as n_units
    from units
    group by run_id, trace_id

),

shared as (

    select
        units_a.run_id as run_a,
        units_b.run_id as run_b,
        units_a.trace_id,
        count(*) as n_shared_units
    from units as units_a
    inner join units as units_b
        on
            units_a.unit_id = units_b.unit_id
            and units_a.trace_id is not distinct from units_b.trace_id
            and units_a.run_id < units_b.run_id
    group by units_a.run_id, units_b.run_id, units_a.trace_id

),

final as (

    select
        shared.run_a,
        shared.run_b,
        shared.trace_id,
        runs_a.setting,
        runs_a.model as model_a,
        runs_b.model as model_b,
        runs_a.corpus_id as corpus_id_a,
        runs_b.corpus_id as corpus_id_b,
        shared.n_shared_units,
        counts_a.n_units - shared.n_shared_units as n_units_only_a,
        counts_b.n_units - shared.n_shared_units as n_units_only_b
    from shared
    cross join params
    inner join run_traces as runs_a
        on shared.run_a = runs_a.run_id and shared.trace_id is not distinct from runs_a.trace_id
    inner join run_traces as runs_b
        on shared.run_b = runs_b.run_id and shared.trace_id is not distinct from runs_b.trace_id
    inner join unit_counts as counts_a
        on shared.run_a = counts_a.run_id and shared.trace_id is not distinct from counts_a.trace_id
    inner join unit_counts as counts_b
        on shared.run_b = counts_b.run_id and shared.trace_id is not distinct from counts_b.trace_id
    where shared.n_shared_units >= params.min_shared_prompts and runs_a.setting = runs_b.setting

)

select * from final
