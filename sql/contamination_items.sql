-- The items of each benchmark that are in the training corpus: class under the n-gram rule, longest span
-- of input and answer found (index tokens), share of tokens in found n-grams, and whether each model
-- prefix-attacked with the input reproduced the answer; contaminated items first, longest span first.
-- Run: lmaudit sql @sql/contamination_items.sql
with

items as (
    select * from fct_contamination_items
),

attacks as (
    select * from stg_contamination_attacks
),

final as (
    select
        items.benchmark,
        items.item_id,
        items.status,
        items.input_longest_span,
        items.answer_longest_span,
        round(items.covered_share, 3) as covered_share,
        round(items.ngram_overlap, 3) as ngram_overlap,
        attacks.model,
        attacks.reproduced
    from items
    left join attacks
        on
            items.benchmark = attacks.benchmark
            and items.item_id = attacks.item_id
            and items.item_hash = attacks.item_hash
    where items.status <> 'clean'
)

select * from final
order by benchmark asc, status = 'partly' asc, greatest(input_longest_span, answer_longest_span) desc, item_id asc
