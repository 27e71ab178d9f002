with

source as (

    select * from {{ source('lake', 'text_method_scores') }}

),

final as (

    select
        cast(method_score_id as varchar) as method_score_id,
        {{ model_key('cast(model as varchar)') }} as model,
        cast(item_id as varchar) as item_id,
        cast(item_kind as varchar) as item_kind,
        cast(text_hash as varchar) as text_hash,
        cast(method as varchar) as method,
        cast(scoring as varchar) as scoring,
        cast(n_tokens as integer) as n_tokens,
        cast(raw_score as double) as raw_score,
        cast(member_score as double) as member_score,
        cast(params as varchar) as params
    from source

)

select * from final
