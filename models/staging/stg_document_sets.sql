with

source as (

    select * from {{ source('lake', 'document_sets') }}

),

final as (

    select
        cast(document_set_row_id as varchar) as document_set_row_id,
        cast(document_set as varchar) as document_set,
        cast(corpus_id as varchar) as corpus_id,
        cast(shard as integer) as shard,
        cast(doc_ix as bigint) as doc_ix,
        cast(doc_id as varchar) as doc_id,
        cast(source as varchar) as source,
        cast(domain as varchar) as domain,
        cast(path as varchar) as path,
        cast(metadata as varchar) as metadata,
        cast(selection as varchar) as selection,
        cast(prompt_set as varchar) as prompt_set,
        cast(created_at as timestamptz) as created_at
    from source

)

select * from final
