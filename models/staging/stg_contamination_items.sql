with

source as (

    select * from {{ source('lake', 'contamination_items') }}

),

final as (

    select
        cast(item_row_id as varchar) as item_row_id,
        cast(benchmark as varchar) as benchmark,
        cast(trace_id as varchar) as trace_id,
        cast(corpus_id as varchar) as corpus_id,
        cast(item_id as varchar) as item_id,
        cast(input_text as varchar) as input_text,
        cast(answer_text as varchar) as answer_text,
        cast(score as double) as score,
        cast(input_tokens as integer) as input_tokens,
        cast(answer_tokens as integer) as answer_tokens,
        cast(source as varchar) as source,
        cast(created_at as timestamptz) as created_at
    from source

)

select * from final
