-- Mixture ablations (LLMSurgeon's Tables 3, 4 and 9): one row per study, model, grid point (axis, value) and
-- estimator, from the per-domain rows `lmaudit mixture sweep` and `lmaudit mixture inject` write. The overlap
-- accuracy and the MAE compare the estimate with the documented mixture over the point's classes (merged
-- domains for the granularity axis); an inject point also carries the injected domain's estimate and truth
-- and the paper's "toxic estimation accuracy", 1 - |estimate - truth|.
with

sweeps as (

    select * from {{ ref('stg_mixture_sweeps') }}

),

points as (

    select
        sweeps.study,
        sweeps.model,
        sweeps.axis,
        sweeps.value,
        sweeps.estimator,
        any_value(sweeps.value_num) as value_num,
        any_value(sweeps.backend) as backend,
        any_value(sweeps.run_id) as run_id,
        any_value(sweeps.n_reference) as n_reference,
        any_value(sweeps.n_generations) as n_generations,
        any_value(sweeps.temperature) as temperature,
        any_value(sweeps.oof_accuracy) as oof_accuracy,
        any_value(sweeps.condition_number) as condition_number,
        any_value(sweeps.target_domain) as target_domain,
        max(sweeps.null_reason) as null_reason,
        max(sweeps.seconds) as seconds,
        count(*) as n_domains,
        count(sweeps.estimate) as n_estimated,
        count(sweeps.truth) as n_truth,
        sum(abs(sweeps.estimate - sweeps.truth)) as l1,
        max(case when sweeps.domain = sweeps.target_domain then sweeps.estimate end) as target_estimate,
        max(case when sweeps.domain = sweeps.target_domain then sweeps.truth end) as target_truth
    from sweeps
    group by sweeps.study, sweeps.model, sweeps.axis, sweeps.value, sweeps.estimator

),

scored as (

    select
        points.study,
        points.model,
        {{ model_name('points.model') }} as model_name,
        points.axis,
        points.value,
        points.value_num,
        points.estimator,
        points.backend,
        points.run_id,
        points.n_reference,
        points.n_generations,
        points.temperature,
        points.oof_accuracy,
        points.condition_number,
        points.n_domains,
        case
            when points.n_estimated = points.n_domains and points.n_truth = points.n_domains
                then 1 - 0.5 * points.l1
        end as overlap_accuracy,
        case
            when points.n_estimated = points.n_domains and points.n_truth = points.n_domains
                then points.l1 / points.n_domains
        end as mae,
        points.target_domain,
        points.target_truth,
        points.target_estimate,
        1 - abs(points.target_estimate - points.target_truth) as target_accuracy,
        case
            when points.null_reason is not null then points.null_reason
            when points.n_truth < points.n_domains then 'no documented mixture for the model'
        end as null_reason,
        points.seconds
    from points

),

final as (

    select * from scored

)

select * from final
