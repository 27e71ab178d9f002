-- How much training text does each PropMe run reproduce? One row per run and tracing pass, read from
-- fct_setting_metrics (one definition per number): generations, ALS (mean longest span, index tokens),
-- R20 / R50, FMR beside FMR20 and FMR without empty or whitespace-only outputs, and the share of such
-- outputs. A run that is not (or only partly) traced says so instead of showing zeros.
-- Run: lmaudit sql @sql/run_overview.sql
with

metrics as (
    select * from fct_setting_metrics
),

per_run as (
    select
        run_id,
        trace_id,
        any_value(model_name) as model_name,
        any_value(setting) as setting,
        max(n_generations) filter (where metric = 'blank_rate') as n_generations,
        max(value) filter (where metric = 'als') as als,
        max(value) filter (where metric = 'r20') as r20,
        max(value) filter (where metric = 'r50') as r50,
        max(value) filter (where metric = 'fmr') as fmr,
        max(value) filter (where metric = 'fmr20') as fmr20,
        max(value) filter (where metric = 'fmr_nonblank') as fmr_nonblank,
        max(value) filter (where metric = 'blank_rate') as blank_rate,
        max(null_reason) filter (where metric = 'fmr') as trace_status
    from metrics
    group by run_id, trace_id
),

final as (
    select
        run_id,
        model_name,
        setting,
        n_generations,
        round(als, 2) as als,
        round(r20, 3) as r20,
        round(r50, 3) as r50,
        round(fmr, 3) as fmr,
        round(fmr20, 3) as fmr20,
        round(fmr_nonblank, 3) as fmr_nonblank,
        round(blank_rate, 3) as blank_rate,
        coalesce(trace_status, 'traced') as trace_status
    from per_run
    order by model_name, setting, run_id
)

select * from final
