-- One row per run pair of int_run_pairs: the hash of everything its paired bootstrap reads (both runs' units and
-- the bootstrap vars, through their int_setting_bootstrap_inputs hashes). int_run_difference_bootstrap keeps a
-- pair's rows while this hash is unchanged and computes only the pairs whose hash has no rows.
with

pairs as (

    select * from {{ ref('int_run_pairs') }}

),

run_inputs as (

    select * from {{ ref('int_setting_bootstrap_inputs') }}

),

final as (

    select
        pairs.run_a,
        pairs.run_b,
        pairs.trace_id,
        md5(concat_ws('|', input_a.input_hash, input_b.input_hash)) as input_hash
    from pairs
    inner join run_inputs as input_a
        on pairs.run_a = input_a.run_id and pairs.trace_id is not distinct from input_a.trace_id
    inner join run_inputs as input_b
        on pairs.run_b = input_b.run_id and pairs.trace_id is not distinct from input_b.trace_id

)

select * from final
