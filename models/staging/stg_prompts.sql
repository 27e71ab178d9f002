with

source as (

    select * from {{ source('lake', 'prompts') }}

),

final as (

    select
        cast(prompt_id as varchar) as prompt_id,
        cast(setting as varchar) as setting,
        cast(language as varchar) as language,
        cast(text as varchar) as text,
        cast(source as varchar) as source,
        cast(corpus_id as varchar) as corpus_id,
        cast(source_doc as varchar) as source_doc,
        cast(true_continuation as varchar) as true_continuation,
        cast(leakage_outcome as varchar) as leakage_outcome,
        cast(leakage_reason as varchar) as leakage_reason,
        cast(token_ids as bigint[]) as token_ids,
        cast(tokenizer as varchar) as tokenizer,
        cast(prompt_set as varchar) as prompt_set,
        cast(created_at as timestamptz) as created_at
    from source

)

select * from final
