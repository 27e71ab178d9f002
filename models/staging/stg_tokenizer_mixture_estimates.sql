with

source as (

    select * from {{ source('lake', 'tokenizer_mixture_estimates') }}

),

keyed as (

    select
        cast(estimate_id as varchar) as estimate_id,
        {{ model_key('cast(model as varchar)') }} as model,
        cast(model as varchar) as recorded_model,
        cast(tokenizer as varchar) as tokenizer,
        cast(tokenizer_sha256 as varchar) as tokenizer_sha256,
        cast(domain as varchar) as domain,
        cast(estimate as double) as estimate,
        cast(ci_low as double) as ci_low,
        cast(ci_high as double) as ci_high,
        cast(n_merges_used as bigint) as n_merges_used,
        cast(n_merges_total as bigint) as n_merges_total,
        cast(n_reference_docs as bigint) as n_reference_docs,
        cast(reference_bytes as bigint) as reference_bytes,
        cast(n_constraints as bigint) as n_constraints,
        cast(objective as double) as objective,
        cast(solver_status as varchar) as solver_status,
        cast(n_boot as bigint) as n_boot,
        cast(n_boot_failed as bigint) as n_boot_failed,
        cast(seed as bigint) as seed,
        cast(ci_level as double) as ci_level,
        cast(reference_source as varchar) as reference_source,
        cast(params as varchar) as params,
        cast(created_at as timestamptz) as created_at
    from source

),

final as (

    {{ one_model_spelling('keyed', 'created_at') }}

)

select * from final
