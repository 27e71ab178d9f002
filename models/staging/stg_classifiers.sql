with

source as (

    select * from {{ source('lake', 'classifiers') }}

),

final as (

    select
        cast(classifier_id as varchar) as classifier_id,
        cast(name as varchar) as name,
        cast(backend as varchar) as backend,
        cast(params as varchar) as params,
        cast(domains as varchar[]) as domains,
        cast(temperature as double) as temperature,
        cast(fitted_on as varchar) as fitted_on,
        cast(created_at as timestamptz) as created_at
    from source

)

select * from final
