with

source as (

    select * from {{ source('lake', 'contamination_spans') }}

),

final as (

    select
        cast(span_row_id as varchar) as span_row_id,
        cast(benchmark as varchar) as benchmark,
        cast(trace_id as varchar) as trace_id,
        cast(item_id as varchar) as item_id,
        cast(part as varchar) as part,
        cast(start_tok as integer) as start_tok,
        cast(end_tok as integer) as end_tok,
        cast(length as integer) as length,
        cast(count as bigint) as count,
        cast(text as varchar) as text
    from source

)

select * from final
