-- One row per lake partition of spans: the hash of what its rows of int_generation_span_facts are computed from
-- (the partition's name, its spans' count and keys, and the vars its rows read: the long-span threshold and the
-- loop detector's, through int_span_loops; a bootstrap or metric var leaves the span facts as they are).
-- int_generation_span_facts keeps a partition's rows while this hash is unchanged and computes only the
-- partitions whose hash has no rows (ingest/marts/incremental.py). A partition's name is a hash of its
-- generations' ids and texts (ingest/trace/run.py), and a span's documents are written with it, so a changed
-- partition changes its name or its span keys.
with

spans as (

    select * from {{ ref('stg_spans') }}

),

params as (

    select * from {{ ref('int_propme_params') }}

),

partitions as (

    select
        lake_partition,
        count(*) as n_spans,
        bit_xor(hash(span_id)) as span_keys
    from spans
    group by lake_partition

),

final as (

    select
        partitions.lake_partition,
        partitions.n_spans,
        {{ propme_input_hash([
            'partitions.lake_partition', 'partitions.n_spans', 'partitions.span_keys', 'params.long_span_tokens',
            'params.loop_min_tokens', 'params.loop_max_period', 'params.loop_min_repeats', 'params.loop_min_share'
        ]) }} as input_hash
    from partitions
    cross join params

)

select * from final
