with

source as (

    select * from {{ source('lake', 'mixtures_documented') }}

),

final as (

    select
        cast(mixture_id as varchar) as mixture_id,
        {{ model_key('cast(model as varchar)') }} as model,
        cast(domain as varchar) as domain,
        cast(weight as double) as weight,
        cast(source as varchar) as source
    from source

)

select * from final
