-- The estimated training mixture over training steps, against the truth: one row per (checkpoint, run,
-- classifier, estimator, domain) of fct_mixture_estimates whose model is a checkpoint (int_model_checkpoints),
-- with the documented share of the domain and the group's overlap accuracy and MAE from
-- fct_mixture_evaluation. Model-level estimators (mia_*, bpe_merges) have no run or classifier.
with

estimates as (

    select
        model,
        run_id,
        classifier_id,
        classifier_name,
        estimator,
        domain,
        estimate,
        ci_low,
        ci_high
    from {{ ref('fct_mixture_estimates') }}

),

checkpoints as (

    select
        model,
        base_model,
        step
    from {{ ref('int_model_checkpoints') }}

),

evaluation as (

    select
        run_id,
        run_model,
        classifier_id,
        estimator,
        documented_model,
        domains,
        truth,
        overlap_accuracy,
        mae
    from {{ ref('fct_mixture_evaluation') }}

),

final as (

    select
        checkpoints.base_model,
        checkpoints.step,
        estimates.model,
        estimates.run_id,
        estimates.classifier_id,
        estimates.classifier_name,
        estimates.estimator,
        estimates.domain,
        estimates.estimate,
        estimates.ci_low,
        estimates.ci_high,
        evaluation.documented_model,
        evaluation.truth[list_position(evaluation.domains, estimates.domain)] as truth,
        evaluation.overlap_accuracy,
        evaluation.mae
    from estimates
    inner join checkpoints on estimates.model = checkpoints.model
    left join evaluation
        on
            estimates.run_id is not distinct from evaluation.run_id
            and estimates.model = evaluation.run_model
            and estimates.classifier_id is not distinct from evaluation.classifier_id
            and estimates.estimator = evaluation.estimator

)

select * from final
