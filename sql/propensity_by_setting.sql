-- Propensity of each model across settings: PM = f_p / (f_p + f_c) against the prefix attack for the
-- headline metrics, with the interval and whether it differs from neutral (0.5).
-- Run: lmaudit sql @sql/propensity_by_setting.sql
with

propensity as (
    select * from fct_propensity
),

model_names as (
    select distinct
        run_id,
        model_name
    from fct_setting_metrics
),

final as (
    select
        propensity.propensity_run_id as run_id,
        model_names.model_name,
        propensity.propensity_setting as setting,
        propensity.metric,
        round(propensity.f_p, 3) as f_p,
        round(propensity.f_c, 3) as f_c,
        round(propensity.pm, 3) as pm,
        case
            -- no event in the setting: the bootstrap's [0, 0], and the PM its rule-of-three bound still allows
            -- (rounded up), which `differs` reads
            when propensity.ci_low is not null and propensity.pm_upper_rule_of_three is not null
                then printf(
                    '[0, 0]; PM at most %.3f (rule of three)',
                    ceil(round(propensity.pm_upper_rule_of_three * 1000, 9)) / 1000
                )
            when propensity.ci_low is not null then printf('[%.3f, %.3f]', propensity.ci_low, propensity.ci_high)
            else propensity.null_reason
        end as ci_95_or_reason,
        propensity.pm_differs_from_neutral as differs
    from propensity
    left join model_names on propensity.propensity_run_id = model_names.run_id
    where propensity.metric in ('fmr', 'fmr50', 'nvr', 'r50')
    order by model_names.model_name, setting, run_id, propensity.metric
)

select * from final
