with

source as (

    select * from {{ source('lake', 'contamination_attacks') }}

),

keyed as (

    select
        cast(attack_id as varchar) as attack_id,
        cast(benchmark as varchar) as benchmark,
        cast(item_id as varchar) as item_id,
        cast(item_hash as varchar) as item_hash,
        {{ model_key('cast(model as varchar)') }} as model,
        cast(model as varchar) as recorded_model,
        cast(continuation as varchar) as continuation,
        cast(n_tokens as integer) as n_tokens,
        cast(max_new_tokens as integer) as max_new_tokens,
        cast(prompt_tokens as integer) as prompt_tokens,
        cast(answer_prefix_share as double) as answer_prefix_share,
        cast(reproduced as boolean) as reproduced,
        cast(created_at as timestamptz) as created_at
    from source

),

final as (

    {{ one_model_spelling('keyed', 'created_at', within=['benchmark']) }}

)

select * from final
