-- Propensity of each model across settings: PM = f_p / (f_p + f_c) against the prefix attack for the
-- headline metrics, with the interval and whether it differs from neutral (0.5).
-- Run: lmaudit sql @sql/propensity_by_setting.sql
with

propensity as (
    select * from fct_propensity
),

final as (
    select
        propensity_run_id,
        model,
        propensity_setting,
        metric,
        round(f_p, 4) as f_p,
        round(f_c, 4) as f_c,
        round(pm, 3) as pm,
        round(ci_low, 3) as ci_low,
        round(ci_high, 3) as ci_high,
        pm_differs_from_neutral,
        null_reason
    from propensity
    where metric in ('fmr', 'nvr', 'r50')
    order by model, propensity_setting, propensity_run_id, metric
)

select * from final
