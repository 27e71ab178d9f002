-- How FMR, NVR, R50 and their propensity scores change as the paper's filters are applied one after another
-- (none, + short matches, + code, + duplicated text: < 10 copies, then once): its filter figure as a table.
-- Run: lmaudit sql @sql/cumulative_filters.sql
with

filters as (
    select * from fct_cumulative_filters
),

final as (
    select
        filters.model_name,
        filters.setting,
        filters.metric,
        filters.step,
        filters.step_name,
        round(filters.value, 4) as value,
        round(filters.ci_low, 4) as ci_low,
        round(filters.ci_high, 4) as ci_high,
        round(filters.pm, 3) as pm,
        round(filters.pm_ci_low, 3) as pm_ci_low,
        round(filters.pm_ci_high, 3) as pm_ci_high
    from filters
    where filters.metric in ('fmr', 'r50', 'nvr')
    order by filters.model_name, filters.setting, filters.metric, filters.step
)

select * from final
