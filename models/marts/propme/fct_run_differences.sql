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

    {{ propme_difference_joined(
        ['n_shared_units', 'n_units_only_a', 'n_units_only_b'],
        'a denominator is 0 on the shared prompts'
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
        joined.metric,
        {{ propme_difference_values('joined') }},
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
