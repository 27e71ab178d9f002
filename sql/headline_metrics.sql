-- The headline table: FMR (beside FMR20 and FMR without empty or whitespace-only outputs), ALS, NVR and R50
-- per PropMe run with 95% bootstrap intervals and units.
-- Run: lmaudit sql @sql/headline_metrics.sql
with

metrics as (
    select * from fct_setting_metrics
),

final as (
    select
        run_id,
        model_name,
        setting,
        metric,
        round(value, 4) as value,
        round(ci_low, 4) as ci_low,
        round(ci_high, 4) as ci_high,
        n_units,
        n_excluded,
        null_reason
    from metrics
    where metric in ('fmr', 'fmr20', 'fmr_nonblank', 'als', 'nvr', 'r50')
    order by model_name, setting, run_id, metric
)

select * from final
