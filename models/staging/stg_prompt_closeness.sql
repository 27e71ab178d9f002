with

source as (

    select * from {{ source('lake', 'prompt_closeness') }}

),

final as (

    select
        cast(closeness_id as varchar) as closeness_id,
        cast(prompt_set as varchar) as prompt_set,
        cast(corpus_id as varchar) as corpus_id,
        cast(item_group as varchar) as item_group,
        cast(item_id as varchar) as item_id,
        cast(source as varchar) as source,
        cast(text as varchar) as text,
        cast(n_tokens as integer) as n_tokens,
        cast(similarity as double) as similarity,
        cast(selection_score as double) as selection_score,
        cast(embedder as varchar) as embedder,
        cast(n_reference_docs as bigint) as n_reference_docs,
        cast(reference_seed as bigint) as reference_seed,
        cast(created_at as timestamptz) as created_at
    from source

)

select * from final
