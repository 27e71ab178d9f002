-- One row per (run, tracing pass, unit, metric, filter step): numerator and denominator of FMR, NVR and R50
-- after the paper's filters are applied one after another (docs/propme-analyses.md): 1 none (the metrics as
-- fct_setting_metrics defines them), 2 + short matches (only matches of >= long_span_tokens count),
-- 3 + code (code-like generations leave), 4 + duplicated text (only long spans whose first 50 tokens occur
-- fewer than rare_max_count times), 5 + not unique (only those occurring once). Degenerate generations and loop
-- spans are excluded at every step, as in the headline metrics; every fact comes from int_generation_facts, so
-- its rules (blank outputs, loops) hold here too. NVR has no duplication step (steps 1-3 only).
-- `metric_key` = metric || '@' || step feeds the bootstrap.
-- Incremental by (run, tracing pass), as int_metric_units (macros/propme_run_incremental.sql).
{{ config(
    materialized='incremental',
    incremental_strategy='append',
    on_schema_change='fail',
    pre_hook="{{ propme_delete_stale(['run_id', 'trace_id'], propme_run_fact_hashes()) }}"
) }}

with

params as (

    select * from {{ ref('int_propme_params') }}

),

todo as (

    {{ propme_runs_to_compute() }}

),

facts as (

    select
        facts.*,
        todo.input_hash as run_input_hash
    from {{ ref('int_generation_facts') }} as facts
    inner join todo on facts.run_id = todo.run_id and facts.trace_id is not distinct from todo.trace_id

),

steps as (

    select v.*
    from (
        values
        (1, 'none'),
        (2, 'short_matches'),
        (3, 'code_like'),
        (4, 'duplicated_lt10'),
        (5, 'duplicated_once')
    ) as v (step, step_name)

),

flagged as (

    select
        facts.run_id,
        facts.trace_id,
        facts.unit_id,
        facts.unit_kind,
        facts.run_input_hash,
        {{ propme_metric_flags('facts', 'params') }}
    from facts
    cross join params
    where facts.is_traced

),

per_step as (

    select
        flagged.*,
        steps.step,
        steps.step_name,
        flagged.not_degenerate and (steps.step < 3 or not flagged.is_code_like) as kept,
        (steps.step < 4 or flagged.is_lt10) and (steps.step < 5 or flagged.is_once) as duplication_ok,
        case when steps.step < 2 then flagged.fm_raw else flagged.fm_long end as fmr_hit,
        case when steps.step < 2 then flagged.nv_sum else flagged.nv_sum_long end as nv_num
    from flagged
    cross join steps

),

per_unit as (

    select
        run_id,
        trace_id,
        unit_id,
        step,
        any_value(step_name) as step_name,
        any_value(unit_kind) as unit_kind,
        any_value(run_input_hash) as input_hash,
        count(*) as n_gen,
        count(*) filter (where kept) as n_kept,
        count(*) filter (where kept and fmr_hit and duplication_ok) as fmr_hits,
        coalesce(sum(nv_num) filter (where kept), 0) as nv_sum,
        coalesce(sum(n_nv_docs) filter (where kept), 0) as nv_pairs,
        count(*) filter (where kept and r_long and duplication_ok) as r50_hits
    from per_step
    group by run_id, trace_id, unit_id, step

),

metric_lists as (

    select
        run_id,
        trace_id,
        unit_id,
        unit_kind,
        step,
        step_name,
        input_hash,
        n_gen,
        n_kept,
        [
            { 'metric': 'fmr', 'num': fmr_hits, 'den': n_kept, 'kept': true },
            { 'metric': 'nvr', 'num': nv_sum, 'den': nv_pairs, 'kept': step <= 3 },
            { 'metric': 'r50', 'num': r50_hits, 'den': n_kept, 'kept': true }
        ] as metric_rows
    from per_unit

),

unpivoted as (

    select
        run_id,
        trace_id,
        unit_id,
        unit_kind,
        step,
        step_name,
        input_hash,
        n_gen,
        n_kept,
        unnest(metric_rows) as m
    from metric_lists

),

final as (

    select
        unpivoted.run_id,
        unpivoted.trace_id,
        unpivoted.unit_id,
        unpivoted.unit_kind,
        unpivoted.m.metric,
        unpivoted.step,
        unpivoted.step_name,
        unpivoted.m.metric || '@' || unpivoted.step as metric_key,
        cast(unpivoted.m.num as double) as num,
        cast(unpivoted.m.den as double) as den,
        unpivoted.n_gen as n_generations,
        cast(unpivoted.n_kept as bigint) as n_eligible,
        unpivoted.input_hash
    from unpivoted
    where unpivoted.m.kept

)

select * from final
