with

source as (

    select * from {{ source('lake', 'personal_data_findings') }}

),

final as (

    select
        cast(finding_id as varchar) as finding_id,
        cast(span_id as varchar) as span_id,
        cast(trace_id as varchar) as trace_id,
        cast(generation_id as varchar) as generation_id,
        cast(kind as varchar) as kind,
        cast(subtype as varchar) as subtype,
        cast(start_char as integer) as start_char,
        cast(end_char as integer) as end_char,
        cast(masked as varchar) as masked,
        cast(value_hash as varchar) as value_hash,
        cast(created_at as varchar[]) as created_at
    from source

)

select * from final
