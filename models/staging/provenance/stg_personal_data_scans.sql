with

source as (

    select * from {{ source('lake', 'personal_data_scans') }}

),

final as (

    select
        cast(scan_id as varchar) as scan_id,
        cast(span_id as varchar) as span_id,
        cast(trace_id as varchar) as trace_id,
        cast(generation_id as varchar) as generation_id,
        cast(n_findings as integer) as n_findings,
        cast(detector as varchar) as detector,
        cast(created_at as varchar[]) as created_at
    from source

)

select * from final
