-- The membership-inference benchmark's parameters (dbt vars `mia_benchmark_*`, declared in dbt_project.yml)
-- as one typed row; fct_mia_benchmark reads its bootstrap from here and writes the values into its rows.
with

vars as (

    select
        cast({{ var('mia_benchmark_bootstrap_resamples', 1000) }} as integer) as bootstrap_resamples,
        cast({{ var('mia_benchmark_bootstrap_seed', 0) }} as bigint) as bootstrap_seed,
        cast({{ var('mia_benchmark_ci_level', 0.95) }} as double) as ci_level

),

final as (

    select
        bootstrap_resamples,
        bootstrap_seed,
        ci_level
    from vars

)

select * from final
