with

source as (

    select * from {{ source('lake', 'document_provenance') }}

),

final as (

    select
        cast(provenance_id as varchar) as provenance_id,
        cast(corpus_key as varchar) as corpus_key,
        cast(corpus_id as varchar) as corpus_id,
        cast(index_dir as varchar) as index_dir,
        cast(shard as integer) as shard,
        cast(doc_ix as bigint) as doc_ix,
        cast(doc_id as varchar) as doc_id,
        cast(doc_tokens as bigint) as doc_tokens,
        cast(doc_chars as bigint) as doc_chars,
        cast(text_hash as varchar) as text_hash,
        cast(source as varchar) as source,
        cast(path as varchar) as path,
        cast(url as varchar) as url,
        cast(repository as varchar) as repository,
        cast(licence_declared as varchar) as licence_declared,
        cast(licence_declared_spdx as varchar) as licence_declared_spdx,
        cast(licence_detected as varchar) as licence_detected,
        cast(licence_ids as varchar[]) as licence_ids,
        cast(licence_evidence as varchar) as licence_evidence,
        cast(licence_coverage as double) as licence_coverage,
        cast(licence_text_truncated as boolean) as licence_text_truncated,
        cast(metadata as varchar) as metadata,
        cast(detector as varchar) as detector,
        cast(created_at as varchar[]) as created_at
    from source

)

select * from final
