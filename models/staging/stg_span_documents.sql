with

source as (

    select * from {{ source('lake', 'span_documents') }}

),

final as (

    select
        cast(span_document_id as varchar) as span_document_id,
        cast(span_id as varchar) as span_id,
        cast(shard as integer) as shard,
        cast(doc_ix as bigint) as doc_ix,
        cast(doc_id as varchar) as doc_id,
        cast(source as varchar) as source,
        cast(domain as varchar) as domain,
        cast(metadata as varchar) as metadata,
        cast(window_text as varchar) as window_text,
        cast(match_tier as varchar) as match_tier,
        cast(nv_recall as double) as nv_recall,
        cast(nv_matched_words as integer) as nv_matched_words,
        cast(nv_generation_words as integer) as nv_generation_words,
        cast(nv_document_words as integer) as nv_document_words,
        parse_filename(filename, true) as lake_partition
    from source

)

select * from final
