with

source as (

    select * from {{ source('lake', 'traced_generations') }}

),

final as (

    select
        cast(traced_generation_id as varchar) as traced_generation_id,
        cast(trace_id as varchar) as trace_id,
        cast(generation_id as varchar) as generation_id,
        cast(text_hash as varchar) as text_hash,
        cast(n_index_tokens as integer) as n_index_tokens
    from source

)

select * from final
