-- PropMe's headline metrics over training steps: fct_setting_metrics rows (FMR, FMR20, ALS, NVR, R50) of runs
-- whose model is a checkpoint (int_model_checkpoints), one row per (checkpoint, run, tracing pass, metric).
with

metrics as (

    select
        run_id,
        trace_id,
        model,
        setting,
        metric,
        value,
        ci_low,
        ci_high,
        n_units,
        null_reason
    from {{ ref('fct_setting_metrics') }}
    where metric in ('fmr', 'fmr20', 'als', 'nvr', 'r50')

),

checkpoints as (

    select
        model,
        base_model,
        step
    from {{ ref('int_model_checkpoints') }}

),

final as (

    select
        checkpoints.base_model,
        checkpoints.step,
        metrics.model,
        metrics.run_id,
        metrics.trace_id,
        metrics.setting,
        metrics.metric,
        metrics.value,
        metrics.ci_low,
        metrics.ci_high,
        metrics.n_units,
        metrics.null_reason
    from metrics
    inner join checkpoints on metrics.model = checkpoints.model

)

select * from final
