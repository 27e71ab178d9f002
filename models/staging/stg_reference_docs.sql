with

source as (

    select * from {{ source('lake', 'reference_docs') }}

),

final as (

    select
        cast(ref_doc_id as varchar) as ref_doc_id,
        cast(domain as varchar) as domain,
        cast(text as varchar) as text,
        cast(split as varchar) as split,
        cast(fold as integer) as fold,
        cast(source as varchar) as source,
        cast(doc_id as varchar) as doc_id
    from source

)

select * from final
