-- What are the long matches? Per run, the share of long matches (>= 20-token spans) that are code,
-- licence/boilerplate, documentation, prose or other, with counts and the longest example.
-- Run: lmaudit sql @sql/long_match_categories.sql
with

categories as (
    select * from fct_long_match_categories
),

final as (
    select
        categories.model_name,
        categories.setting,
        categories.category,
        categories.n_generations,
        round(categories.share_of_long_matches, 3) as share,
        categories.n_full_matches,
        categories.n_from_domain,
        categories.max_length,
        categories.longest_example
    from categories
    order by categories.model_name asc, categories.setting asc, categories.n_generations desc
)

select * from final
