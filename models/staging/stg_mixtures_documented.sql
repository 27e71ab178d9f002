with

source as (

    select * from {{ source('lake', 'mixtures_documented') }}

),

keyed as (

    select
        cast(mixture_id as varchar) as mixture_id,
        {{ model_key('cast(model as varchar)') }} as model,
        cast(model as varchar) as recorded_model,
        cast(domain as varchar) as domain,
        cast(weight as double) as weight,
        cast(source as varchar) as source
    from source

),

final as (

    {{ one_model_spelling('keyed') }}

)

select * from final
