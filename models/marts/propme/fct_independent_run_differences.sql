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

    {{ propme_difference_joined(
        ['corpus_id_a', 'corpus_id_b', 'n_generations_a', 'n_generations_b'],
        'a denominator is 0'
    ) }}

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
        {{ propme_difference_values('joined') }},
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
