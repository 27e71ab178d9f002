-- One row per (benchmark, tracing pass, prefix-attacked model; model null when none was attacked): how many
-- items are clean / partly / contaminated under the n-gram rule, the contamination rate, and the share of
-- items whose answer the model reproduced from the input, overall and among contaminated and clean items.
with

items as (

    select * from {{ ref('fct_contamination_items') }}

),

attacks as (

    select * from {{ ref('stg_contamination_attacks') }}

),

rates as (

    select
        benchmark,
        trace_id,
        any_value(corpus_id) as corpus_id,
        any_value(ngram) as ngram,
        any_value(contaminated_share) as contaminated_share,
        any_value(params) as params,
        count(*) as n_items,
        count(*) filter (where status = 'clean') as n_clean,
        count(*) filter (where status = 'partly') as n_partly,
        count(*) filter (where status = 'contaminated') as n_contaminated,
        count(*) filter (where too_short) as n_too_short,
        avg(covered_share) as mean_covered_share,
        max(longest_span) as longest_span
    from items
    group by benchmark, trace_id

),

attacked as (

    select
        items.benchmark,
        items.trace_id,
        attacks.model,
        count(*) as n_attacked,
        count(*) filter (where attacks.reproduced) as n_reproduced,
        count(*) filter (where items.status = 'contaminated') as n_attacked_contaminated,
        count(*) filter (where attacks.reproduced and items.status = 'contaminated') as n_reproduced_contaminated,
        count(*) filter (where items.status = 'clean') as n_attacked_clean,
        count(*) filter (where attacks.reproduced and items.status = 'clean') as n_reproduced_clean
    from items
    inner join attacks
        on
            items.benchmark = attacks.benchmark
            and items.item_id = attacks.item_id
            and items.item_hash = attacks.item_hash
    group by items.benchmark, items.trace_id, attacks.model

),

final as (

    select
        md5(concat_ws('|', rates.benchmark, rates.trace_id, coalesce(attacked.model, ''))) as benchmark_row_id,
        rates.benchmark,
        rates.trace_id,
        rates.corpus_id,
        attacked.model,
        rates.n_items,
        rates.n_clean,
        rates.n_partly,
        rates.n_contaminated,
        rates.n_too_short,
        rates.n_contaminated / rates.n_items as contamination_rate,
        (rates.n_partly + rates.n_contaminated) / rates.n_items as overlap_rate,
        rates.mean_covered_share,
        rates.longest_span,
        coalesce(attacked.n_attacked, 0) as n_attacked,
        coalesce(attacked.n_reproduced, 0) as n_reproduced,
        attacked.n_reproduced / nullif(attacked.n_attacked, 0) as reproduction_rate,
        attacked.n_reproduced_contaminated / nullif(attacked.n_attacked_contaminated, 0)
            as reproduction_rate_contaminated,
        attacked.n_reproduced_clean / nullif(attacked.n_attacked_clean, 0) as reproduction_rate_clean,
        rates.ngram,
        rates.contaminated_share,
        rates.params
    from rates
    left join attacked
        on rates.benchmark = attacked.benchmark and rates.trace_id = attacked.trace_id

)

select * from final
