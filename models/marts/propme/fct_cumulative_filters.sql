-- One row per (run, tracing pass, metric, filter step): FMR, NVR or R50 after the paper's filters up to this step
-- are applied one after another (none, + short matches, + code, + duplicated text: fewer than 10 copies, then
-- exactly one), with its interval ([0, 0] with zero events, the rule-of-three bound beside it), and for a
-- non-adversarial run its propensity score against the capability run after the same filters.
with

params as (

    select * from {{ ref('int_propme_params') }}

),

run_traces as (

    select * from {{ ref('int_run_traces') }}

),

bootstrap as (

    select * from {{ ref('int_cumulative_filter_bootstrap') }}

),

propensity as (

    select * from {{ ref('int_cumulative_filter_propensity') }}

),

split as (

    select
        bootstrap.*,
        split_part(bootstrap.metric, '@', 1) as base_metric,
        cast(split_part(bootstrap.metric, '@', 2) as integer) as step
    from bootstrap

),

joined as (

    select
        split.run_id,
        split.trace_id,
        run_traces.model,
        {{ model_name('run_traces.model') }} as model_name,
        run_traces.corpus_id,
        run_traces.setting,
        run_traces.setting_kind,
        split.base_metric as metric,
        split.step,
        case split.step
            when 1 then 'none'
            when 2 then 'short_matches'
            when 3 then 'code_like'
            when 4 then 'duplicated_lt10'
            when 5 then 'duplicated_once'
        end as step_name,
        split.value,
        split.ci_low,
        split.ci_high,
        split.numerator,
        split.denominator,
        split.n_units,
        split.n_generations,
        split.n_excluded,
        split.base_metric != 'nvr' and split.numerator = 0 and split.n_units > 0 as zero_events,
        propensity.capability_run_id,
        propensity.f_c,
        propensity.pm,
        propensity.ci_low as pm_ci_low,
        propensity.ci_high as pm_ci_high,
        propensity.n_skipped_rounds as pm_skipped_rounds
    from split
    inner join run_traces
        on split.run_id = run_traces.run_id and split.trace_id is not distinct from run_traces.trace_id
    left join propensity
        on
            split.run_id = propensity.propensity_run_id
            and split.trace_id is not distinct from propensity.trace_id
            and split.metric = propensity.metric

),

final as (

    select
        joined.run_id,
        joined.trace_id,
        joined.model,
        joined.model_name,
        joined.corpus_id,
        joined.setting,
        joined.setting_kind,
        joined.metric,
        joined.step,
        joined.step_name,
        case when joined.denominator > 0 then joined.value end as value,
        case
            when joined.denominator = 0 then null
            when joined.zero_events then 0.0
            else joined.ci_low
        end as ci_low,
        case
            when joined.denominator = 0 then null
            when joined.zero_events then 0.0
            else joined.ci_high
        end as ci_high,
        case when joined.denominator > 0 then 'percentile_bootstrap' end as ci_method,
        {{ propme_rule_of_three_upper('joined.zero_events', 'joined.n_units') }} as upper_rule_of_three,
        joined.numerator,
        joined.denominator,
        joined.n_units,
        joined.n_generations,
        joined.n_excluded,
        joined.capability_run_id,
        joined.f_c,
        joined.pm,
        joined.pm_ci_low,
        joined.pm_ci_high,
        joined.pm_skipped_rounds,
        case when joined.denominator = 0 then 'no generation left after the filters' end as null_reason,
        params.bootstrap_resamples as n_resamples,
        params.bootstrap_seed,
        params.ci_level,
        params.params
    from joined
    cross join params

)

select * from final
