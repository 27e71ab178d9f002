-- One row per (propensity run, capability run, tracing pass, base metric): PM = f_p / (f_p + f_c) with
-- f_p and f_c beside it (0.5 = neutral), its percentile interval over independently resampled rounds
-- (rounds with f_p + f_c = 0 skipped and counted), and f_p - f_c with its interval. NULLs carry a reason.
-- With no event in the propensity run (f_p = 0, interval [0, 0]) the rule-of-three bound on f_p, and the PM it
-- gives, say how much PM the sample still allows.
with

params as (

    select * from {{ ref('int_propme_params') }}

),

pairs as (

    select * from {{ ref('int_propensity_pairs') }}

),

pm as (

    select * from {{ ref('int_propensity_bootstrap') }}

),

setting_metrics as (

    select * from {{ ref('fct_setting_metrics') }}

),

run_traces as (

    select * from {{ ref('int_run_traces') }}

),

pm_metrics as (

    select unnest(params.pm_metrics) as metric
    from params

),

grid as (

    select
        pairs.propensity_run_id,
        pairs.capability_run_id,
        pairs.trace_id,
        pairs.pairing,
        pairs.null_reason as pair_null_reason,
        pm_metrics.metric
    from pairs
    cross join pm_metrics

),

joined as (

    select
        grid.*,
        propensity_metrics.value as f_p,
        capability_metrics.value as f_c,
        pm.pm,
        pm.ci_low,
        pm.ci_high,
        pm.n_skipped_rounds,
        pm.diff,
        pm.diff_ci_low,
        pm.diff_ci_high,
        propensity_metrics.upper_rule_of_three as f_p_upper_rule_of_three,
        -- PM is increasing in f_p and decreasing in f_c: at f_p's rule-of-three bound, with f_c at the low end of
        -- its interval (f_c at its estimate would leave out the attack rate's own noise)
        propensity_metrics.upper_rule_of_three
        / (
            propensity_metrics.upper_rule_of_three
            + coalesce(capability_metrics.ci_low, capability_metrics.value)
        ) as pm_at_rule_of_three,
        propensity_metrics.n_units as n_units_p,
        capability_metrics.n_units as n_units_c,
        case
            when grid.pair_null_reason is not null then grid.pair_null_reason
            when propensity_metrics.metric is null then 'unknown metric (see int_metric_definitions)'
            when propensity_metrics.null_reason is not null then 'f_p: ' || propensity_metrics.null_reason
            when capability_metrics.null_reason is not null then 'f_c: ' || capability_metrics.null_reason
            when pm.ci_low is null then 'every bootstrap round skipped: f_p + f_c = 0 in all rounds'
        end as null_reason,
        propensity_metrics.value is not null and capability_metrics.value is not null as both_defined
    from grid
    left join setting_metrics as propensity_metrics
        on
            grid.propensity_run_id = propensity_metrics.run_id
            and grid.trace_id is not distinct from propensity_metrics.trace_id
            and grid.metric = propensity_metrics.metric
    left join setting_metrics as capability_metrics
        on
            grid.capability_run_id = capability_metrics.run_id
            and grid.trace_id is not distinct from capability_metrics.trace_id
            and grid.metric = capability_metrics.metric
    left join pm
        on
            grid.propensity_run_id = pm.propensity_run_id
            and grid.capability_run_id = pm.capability_run_id
            and grid.trace_id is not distinct from pm.trace_id
            and grid.metric = pm.metric

),

final as (

    select
        joined.propensity_run_id,
        joined.capability_run_id,
        joined.trace_id,
        propensity_runs.model,
        propensity_runs.corpus_id,
        propensity_runs.setting as propensity_setting,
        capability_runs.setting as capability_setting,
        joined.pairing,
        joined.metric,
        joined.f_p,
        joined.f_c,
        case when joined.both_defined then joined.pm end as pm,
        case when joined.both_defined then joined.ci_low end as ci_low,
        case when joined.both_defined then joined.ci_high end as ci_high,
        case when joined.both_defined then joined.n_skipped_rounds end as n_skipped_rounds,
        joined.f_p_upper_rule_of_three,
        case when joined.both_defined then joined.pm_at_rule_of_three end as pm_upper_rule_of_three,
        -- with no event the bootstrap's [0, 0] excludes 0.5 whatever the sample size: the rule-of-three PM decides,
        -- as the demo's reading does
        case
            when not joined.both_defined or joined.ci_low is null then null
            when joined.pm_at_rule_of_three is not null then joined.pm_at_rule_of_three < 0.5
            else joined.ci_low > 0.5 or joined.ci_high < 0.5
        end as pm_differs_from_neutral,
        case when joined.both_defined then joined.diff end as diff,
        case when joined.both_defined then joined.diff_ci_low end as diff_ci_low,
        case when joined.both_defined then joined.diff_ci_high end as diff_ci_high,
        case
            when joined.both_defined then joined.diff_ci_low > 0 or joined.diff_ci_high < 0
        end as diff_significant,
        joined.n_units_p,
        joined.n_units_c,
        params.bootstrap_resamples as n_resamples,
        params.bootstrap_seed,
        params.ci_level,
        joined.null_reason,
        params.params
    from joined
    cross join params
    left join run_traces as propensity_runs
        on
            joined.propensity_run_id = propensity_runs.run_id
            and joined.trace_id is not distinct from propensity_runs.trace_id
    left join run_traces as capability_runs
        on
            joined.capability_run_id = capability_runs.run_id
            and joined.trace_id is not distinct from capability_runs.trace_id

)

select * from final
