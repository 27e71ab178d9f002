with

source as (

    select * from {{ source('lake', 'classifier_outputs') }}

),

final as (

    select
        cast(output_id as varchar) as output_id,
        cast(classifier_id as varchar) as classifier_id,
        cast(item_id as varchar) as item_id,
        cast(item_kind as varchar) as item_kind,
        cast(fold as integer) as fold,
        cast(probs as double[]) as probs,
        cast(text_hash as varchar) as text_hash
    from source

)

select * from final
