with

source as (

    select * from {{ source('lake', 'corpora') }}

),

final as (

    select
        cast(corpus_id as varchar) as corpus_id,
        cast(name as varchar) as name,
        cast(tokenizer as varchar) as tokenizer,
        cast(token_dtype as varchar) as token_dtype,
        cast(vocab_size as bigint) as vocab_size,
        cast(eos_token_id as bigint) as eos_token_id,
        cast(n_docs as bigint) as n_docs,
        cast(n_tokens as bigint) as n_tokens,
        cast(n_shards as integer) as n_shards,
        cast(index_dirs as varchar[]) as index_dirs,
        cast(manifest_hash as varchar) as manifest_hash,
        cast(registered_at as timestamptz) as registered_at
    from source

)

select * from final
