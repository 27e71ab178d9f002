-- One row per (run, tracing pass) of int_source_duplication_units: the hash of everything its bootstrap reads
-- (its units' rows and the bootstrap vars). int_source_duplication_bootstrap keeps a run's rows while this hash
-- is unchanged and computes only the runs whose hash has no rows (ingest/marts/incremental.py).
with

units as (

    select * from {{ ref('int_source_duplication_units') }}

),

params as (

    select * from {{ ref('int_propme_params') }}

),

final as (

    select
        units.run_id,
        units.trace_id,
        {{ propme_bootstrap_input_hash('units', 'metric_key') }} as input_hash
    from units
    cross join params
    group by units.run_id, units.trace_id

)

select * from final
