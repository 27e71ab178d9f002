-- Estimated training mixture against the documented one: overlap accuracy and errors per estimator.
-- Run: lmaudit sql @sql/mixture_vs_truth.sql
with

evaluation as (
    select * from fct_mixture_evaluation
),

final as (
    select
        run_id,
        classifier_name,
        estimator,
        documented_model,
        round(100 * overlap_accuracy, 2) as overlap_accuracy_pct,
        round(mae, 4) as mae,
        round(r2, 3) as r2,
        round(kl, 4) as kl,
        null_reason
    from evaluation
    order by run_id asc, overlap_accuracy desc
)

select * from final
