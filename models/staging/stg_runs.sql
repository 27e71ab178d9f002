with

source as (

    select * from {{ source('lake', 'runs') }}

),

final as (

    select
        cast(run_id as varchar) as run_id,
        {{ model_key('cast(model as varchar)') }} as model,
        cast(revision as varchar) as revision,
        cast(corpus_id as varchar) as corpus_id,
        cast(setting as varchar) as setting,
        cast(backend as varchar) as backend,
        cast(temperature as double) as temperature,
        cast(top_p as double) as top_p,
        cast(max_new_tokens as integer) as max_new_tokens,
        cast(n_samples as integer) as n_samples,
        cast(seed_base as bigint) as seed_base,
        cast(sampling_params as varchar) as sampling_params,
        cast(source as varchar) as source,
        cast(code_version as varchar) as code_version,
        cast(started_at as timestamptz) as started_at,
        cast(finished_at as timestamptz) as finished_at,
        -- runs written before `purpose` existed are PropMe runs (the only kind there was)
        cast(coalesce(purpose, 'propme') as varchar) as purpose,
        {{ model_key('cast(tokenizer as varchar)') }} as tokenizer
    from source

)

select * from final
