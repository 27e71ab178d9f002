-- The contamination parameters (dbt vars `contamination_*`, declared in dbt_project.yml) as one typed row,
-- plus all of them as JSON (`params`), which the marts write into their rows.
with

vars as (

    select
        cast({{ var('contamination_ngram', 13) }} as integer) as ngram,
        cast({{ var('contamination_contaminated_share', 0.8) }} as double) as contaminated_share,
        cast({{ var('contamination_bootstrap_resamples', 2000) }} as integer) as bootstrap_resamples,
        cast({{ var('contamination_bootstrap_seed', 0) }} as bigint) as bootstrap_seed,
        cast({{ var('contamination_ci_level', 0.95) }} as double) as ci_level

),

final as (

    select
        ngram,
        contaminated_share,
        bootstrap_resamples,
        bootstrap_seed,
        ci_level,
        cast(json_object(
            'ngram', ngram,
            'contaminated_share', contaminated_share,
            'bootstrap_resamples', bootstrap_resamples,
            'bootstrap_seed', bootstrap_seed,
            'ci_level', ci_level
        ) as varchar) as params
    from vars

)

select * from final
