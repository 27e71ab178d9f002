-- Interval bounds are ordered, PM lies in [0, 1], and proportions lie in [0, 1].
select
    'fct_setting_metrics' as model,
    run_id as row_key,
    metric
from {{ ref('fct_setting_metrics') }}
where
    ci_low > ci_high
    or (metric_kind = 'proportion' and (value < 0 or value > 1 or ci_low < 0 or ci_high > 1))

union all

select
    'fct_propensity' as model,
    propensity_run_id as row_key,
    metric
from {{ ref('fct_propensity') }}
where ci_low > ci_high or pm < 0 or pm > 1 or ci_low < 0 or ci_high > 1 or diff_ci_low > diff_ci_high

union all

select
    'fct_run_differences' as model,
    run_a as row_key,
    metric
from {{ ref('fct_run_differences') }}
where ci_low > ci_high
