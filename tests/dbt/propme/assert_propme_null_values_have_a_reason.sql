-- A PropMe value is NULL exactly when null_reason says why (fct_setting_metrics), and PM is never NULL without
-- a reason (fct_propensity).
select
    'fct_setting_metrics' as model,
    run_id as row_key,
    metric
from {{ ref('fct_setting_metrics') }}
where (value is null) != (null_reason is not null)

union all

select
    'fct_propensity' as model,
    propensity_run_id as row_key,
    metric
from {{ ref('fct_propensity') }}
where (pm is null or ci_low is null) and null_reason is null
