with

source as (

    select * from {{ source('lake', 'text_scores') }}

),

final as (

    select
        cast(score_id as varchar) as score_id,
        {{ model_key('cast(model as varchar)') }} as model,
        cast(item_id as varchar) as item_id,
        cast(item_kind as varchar) as item_kind,
        cast(text_hash as varchar) as text_hash,
        cast(n_tokens as integer) as n_tokens,
        cast(truncated as boolean) as truncated,
        cast(loss as double) as loss,
        cast(zlib_loss as double) as zlib_loss,
        cast(mink as double) as mink,
        cast(minkpp as double) as minkpp,
        cast(ref_model as varchar) as ref_model,
        cast(ref_loss as double) as ref_loss,
        cast(token_logprobs as float[]) as token_logprobs,
        cast(params as varchar) as params
    from source

)

select * from final
