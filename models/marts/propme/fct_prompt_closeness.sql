-- One row per (specific prompt set, item group): how close the group's sentences are to the training data
-- (the paper's closeness evaluation), beside the corpus, the embedder and the size of the training sample.
with

bootstrap as (

    select * from {{ ref('int_prompt_closeness_bootstrap') }}

),

items as (

    select * from {{ ref('stg_prompt_closeness') }}

),

corpora as (

    select * from {{ ref('stg_corpora') }}

),

set_info as (

    select
        prompt_set,
        any_value(corpus_id) as corpus_id,
        any_value(embedder) as embedder,
        any_value(n_reference_docs) as n_reference_docs,
        any_value(reference_seed) as reference_seed,
        max(created_at) as evaluated_at
    from items
    group by prompt_set

),

final as (

    select
        bootstrap.prompt_set,
        set_info.corpus_id,
        corpora.name as corpus_name,
        bootstrap.item_group,
        case bootstrap.item_group
            when 'generic' then 1
            when 'candidate' then 2
            when 'specific' then 3
            when 'training_sentence' then 4
        end as group_order,
        bootstrap.n_items,
        bootstrap.mean_similarity,
        bootstrap.ci_low,
        bootstrap.ci_high,
        bootstrap.diff_vs_generic,
        bootstrap.diff_ci_low,
        bootstrap.diff_ci_high,
        coalesce(bootstrap.diff_ci_low > 0, false) as closer_than_generic,
        set_info.embedder,
        set_info.n_reference_docs,
        set_info.reference_seed,
        bootstrap.n_resamples,
        bootstrap.seed,
        bootstrap.ci_level,
        set_info.evaluated_at
    from bootstrap
    inner join set_info on bootstrap.prompt_set = set_info.prompt_set
    left join corpora on set_info.corpus_id = corpora.corpus_id

)

select * from final
