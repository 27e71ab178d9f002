-- Are the specific prompts closer to the training data than the generic ones? Each group's mean cosine
-- similarity to its nearest training document, and the difference to the generic sentences with a 95%
-- interval: the paper's closeness evaluation (lmaudit prompts specific).
-- Run: lmaudit sql @sql/prompt_closeness.sql
with

closeness as (
    select * from fct_prompt_closeness
),

final as (
    select
        closeness.corpus_name,
        left(closeness.prompt_set, 12) as prompt_set,
        closeness.item_group,
        closeness.n_items,
        round(closeness.mean_similarity, 3) as mean_similarity,
        round(closeness.ci_low, 3) as ci_low,
        round(closeness.ci_high, 3) as ci_high,
        round(closeness.diff_vs_generic, 3) as minus_generic,
        round(closeness.diff_ci_low, 3) as minus_generic_low,
        round(closeness.diff_ci_high, 3) as minus_generic_high,
        closeness.closer_than_generic,
        closeness.embedder
    from closeness
    order by closeness.corpus_name, closeness.prompt_set, closeness.group_order
)

select * from final
