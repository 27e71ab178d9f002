-- The headline table: FMR (beside FMR20, FMR50, FMR without blank outputs and their share), ALS, NVR and R50
-- per PropMe run with 95% bootstrap intervals; where a value cannot be computed, why. `unit`: fraction (0 to 1;
-- `lmaudit demo` prints these as %), tokens (ALS). A rate with no event has the bootstrap's [0, 0] and, beside
-- it, the rule-of-three bound 3 / n_units. n_units: the units (prompts or generations) with an output the metric
-- counts, the n of 3 / n; n_units_resampled: all the units the interval resamples (a unit whose outputs are all
-- degenerate is resampled but can hold no event).
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
        unit,
        case
            when upper_rule_of_three is not null
                then printf('[0, 0]; at most %.4f (3/n)', ceil(round(upper_rule_of_three * 10000, 9)) / 10000)
            when ci_low is not null then printf('[%.4f, %.4f]', ci_low, ci_high)
            else null_reason
        end as ci_95_or_reason,
        n_units,
        n_units_resampled,
        unit_kind,
        n_excluded
    from metrics
    where metric in ('fmr', 'fmr20', 'fmr50', 'fmr_nonblank', 'blank_rate', 'als', 'nvr', 'r50')
    order by model_name, setting, run_id, metric
)

select * from final
