-- The headline table: FMR (beside FMR20, FMR50, FMR without blank outputs and their share), ALS, NVR and R50
-- per PropMe run with 95% bootstrap intervals and units; where a value cannot be computed, why.
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
        case
            when ci_low is not null then printf('[%.4f, %.4f]', ci_low, ci_high)
            else null_reason
        end as ci_95_or_reason,
        n_units
    from metrics
    where metric in ('fmr', 'fmr20', 'fmr50', 'fmr_nonblank', 'blank_rate', 'als', 'nvr', 'r50')
    order by model_name, setting, run_id, metric
)

select * from final
