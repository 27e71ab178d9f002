with

source as (

    select * from {{ source('lake', 'span_counts') }}

),

final as (

    select
        cast(span_id as varchar) as span_id,
        cast(first50_count as bigint) as first50_count,
        cast(whole_count as bigint) as whole_count,
        cast(trim_start as integer) as trim_start,
        cast(trim_end as integer) as trim_end
    from source

)

select * from final
