-- One row per (pair of runs of the same prompt-free setting, tracing pass, metric): metric(run_a) - metric(run_b)
-- with an independent percentile bootstrap interval (no prompts pair the units); significant when it excludes 0.
with

params as (

    select * from {{ ref('int_propme_params') }}

),

pairs as (

    select * from {{ ref('int_unpaired_run_pairs') }}

),

diffs as (

    select * from {{ ref('int_independent_difference_bootstrap') }}

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
        pairs.corpus_id_a,
        pairs.corpus_id_b,
        pairs.n_generations_a,
        pairs.n_generations_b,
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
            when diffs.diff is null then 'a denominator is 0'
            when diffs.ci_low is null then 'every bootstrap round skipped'
        end as null_reason
    from pairs
    inner join setting_metrics as metrics_a
        on
            pairs.run_a = metrics_a.run_id
            and pairs.trace_id = metrics_a.trace_id
    inner join setting_metrics as metrics_b
        on
            pairs.run_b = metrics_b.run_id
            and pairs.trace_id = metrics_b.trace_id
            and metrics_a.metric = metrics_b.metric
    left join diffs
        on
            pairs.run_a = diffs.run_a
            and pairs.run_b = diffs.run_b
            and pairs.trace_id = diffs.trace_id
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
        joined.corpus_id_a,
        joined.corpus_id_b,
        joined.metric,
        'independent' as bootstrap,
        case when joined.null_reason is null then joined.value_a end as value_a,
        case when joined.null_reason is null then joined.value_b end as value_b,
        case when joined.null_reason is null then joined.diff end as diff,
        case when joined.null_reason is null then joined.ci_low end as ci_low,
        case when joined.null_reason is null then joined.ci_high end as ci_high,
        case when joined.null_reason is null then joined.ci_low > 0 or joined.ci_high < 0 end as significant,
        joined.n_generations_a,
        joined.n_generations_b,
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
