with

source as (

    select * from {{ source('lake', 'spans') }}

),

final as (

    select
        cast(span_id as varchar) as span_id,
        cast(trace_id as varchar) as trace_id,
        cast(generation_id as varchar) as generation_id,
        cast(start_tok as integer) as start_tok,
        cast(end_tok as integer) as end_tok,
        cast(length as integer) as length,
        cast(count as bigint) as count,
        cast(unigram_logprob as double) as unigram_logprob,
        cast(kept as boolean) as kept,
        cast(merged as boolean) as merged,
        cast(is_full as boolean) as is_full,
        cast(text as varchar) as text,
        parse_filename(filename, true) as lake_partition
    from source

)

select * from final
