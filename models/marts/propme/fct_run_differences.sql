-- One row per (pair of runs sharing prompts, tracing pass, metric): metric(run_a) - metric(run_b) on the
-- prompts both runs have, with a paired percentile bootstrap interval; significant when it excludes 0.
with

params as (

    select * from {{ ref('int_propme_params') }}

),

pairs as (

    select * from {{ ref('int_run_pairs') }}

),

diffs as (

    select * from {{ ref('int_run_difference_bootstrap') }}

),

setting_metrics as (

    select * from {{ ref('fct_setting_metrics') }}

),

joined as (

    select
        pairs.run_a,
        pairs.run_b,
        pairs.trace_id,
        pairs.setting,
        pairs.model_a,
        pairs.model_b,
        pairs.n_shared_units,
        pairs.n_units_only_a,
        pairs.n_units_only_b,
        metrics_a.metric,
        diffs.value_a,
        diffs.value_b,
        diffs.diff,
        diffs.ci_low,
        diffs.ci_high,
        diffs.n_skipped_resamples,
        case
            when metrics_a.null_reason is not null then 'run_a: ' || metrics_a.null_reason
            when metrics_b.null_reason is not null then 'run_b: ' || metrics_b.null_reason
            when diffs.diff is null then 'a denominator is 0 on the shared prompts'
            when diffs.ci_low is null then 'every bootstrap round skipped'
        end as null_reason
    from pairs
    inner join setting_metrics as metrics_a
        on
            pairs.run_a = metrics_a.run_id
            and pairs.trace_id is not distinct from metrics_a.trace_id
    inner join setting_metrics as metrics_b
        on
            pairs.run_b = metrics_b.run_id
            and pairs.trace_id is not distinct from metrics_b.trace_id
            and metrics_a.metric = metrics_b.metric
    left join diffs
        on
            pairs.run_a = diffs.run_a
            and pairs.run_b = diffs.run_b
            and pairs.trace_id is not distinct from diffs.trace_id
            and metrics_a.metric = diffs.metric

),

final as (

    select
        joined.run_a,
        joined.run_b,
        joined.trace_id,
        joined.setting,
        joined.model_a,
        joined.model_b,
        joined.metric,
        case when joined.null_reason is null then joined.value_a end as value_a,
        case when joined.null_reason is null then joined.value_b end as value_b,
        case when joined.null_reason is null then joined.diff end as diff,
        case when joined.null_reason is null then joined.ci_low end as ci_low,
        case when joined.null_reason is null then joined.ci_high end as ci_high,
        case when joined.null_reason is null then joined.ci_low > 0 or joined.ci_high < 0 end as significant,
        joined.n_shared_units,
        joined.n_units_only_a,
        joined.n_units_only_b,
        joined.n_skipped_resamples,
        params.bootstrap_resamples as n_resamples,
        params.bootstrap_seed,
        params.ci_level,
        joined.null_reason,
        params.params
    from joined
    cross join params

)

select * from final
