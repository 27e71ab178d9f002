-- What the index-labelled membership-inference benchmark holds: candidates per corpus, source and label,
-- with the reasons of the ambiguous ones (excluded from the benchmark).
-- Run: lmaudit sql @sql/mia_benchmark_labels.sql
with

labels as (

    select * from stg_mia_labels

),

final as (

    select
        corpus,
        source,
        label,
        reason,
        count(*) as n_candidates,
        round(avg(n_tokens), 1) as mean_tokens,
        max(longest_match) as max_longest_match
    from labels
    group by corpus, source, label, reason
    order by corpus, source, label, reason

)

select * from final
