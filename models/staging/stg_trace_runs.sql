with

source as (

    select * from {{ source('lake', 'trace_runs') }}

),

final as (

    select
        cast(trace_id as varchar) as trace_id,
        cast(corpus_id as varchar) as corpus_id,
        cast(index_dir as varchar) as index_dir,
        cast(mode as varchar) as mode,
        cast(params as varchar) as params,
        cast(code_version as varchar) as code_version,
        cast(started_at as timestamptz) as started_at,
        cast(finished_at as timestamptz) as finished_at
    from source

)

select * from final
