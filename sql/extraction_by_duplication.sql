-- Is targeted extraction about duplicated documents? The prefix setting's extraction rate by how often the
-- source sequence (prompt + true continuation) occurs in the corpus, with the number of prompts.
-- Run: lmaudit sql @sql/extraction_by_duplication.sql
with

dup as (
    select * from fct_source_duplication
),

final as (
    select
        dup.model_name,
        dup.bucket,
        dup.n_prompts,
        dup.n_hits,
        dup.n_eligible,
        round(dup.te, 4) as te,
        round(dup.ci_low, 4) as ci_low,
        round(dup.ci_high, 4) as ci_high,
        dup.null_reason
    from dup
    order by dup.model_name, dup.bucket_order
)

select * from final
