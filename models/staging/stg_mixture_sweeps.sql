with

source as (

    select * from {{ source('lake', 'mixture_sweeps') }}

),

final as (

    select
        cast(sweep_row_id as varchar) as sweep_row_id,
        cast(study as varchar) as study,
        cast(model as varchar) as model,
        cast(axis as varchar) as axis,
        cast(value as varchar) as value,
        cast(value_num as double) as value_num,
        cast(estimator as varchar) as estimator,
        cast(domain as varchar) as domain,
        cast(estimate as double) as estimate,
        cast(truth as double) as truth,
        cast(target_domain as varchar) as target_domain,
        cast(run_id as varchar) as run_id,
        cast(backend as varchar) as backend,
        cast(n_reference as bigint) as n_reference,
        cast(n_generations as bigint) as n_generations,
        cast(temperature as double) as temperature,
        cast(oof_accuracy as double) as oof_accuracy,
        cast(condition_number as double) as condition_number,
        cast(solver_status as varchar) as solver_status,
        cast(null_reason as varchar) as null_reason,
        cast(truth_source as varchar) as truth_source,
        cast(params as varchar) as params,
        cast(seconds as double) as seconds,
        cast(created_at as timestamptz) as created_at
    from source

)

select * from final
