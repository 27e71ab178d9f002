-- Oriented membership scores (higher = more member-like) of the labelled members and non-members of
-- `lmaudit mia-benchmark label`, one row per (corpus, model, scoring, score, candidate). A score joins a
-- label on (item_kind, item_id, text_hash): it counts only for the text that was labelled. Ambiguous
-- candidates never enter. text_scores give mia_loss, mia_zlib, mia_mink, mia_minkpp, mia_ref (signs in
-- macros/mia_oriented_text_scores.sql, as int_mixture_mia_scores); text_method_scores their member_score as
-- mia_<method>.
with

labels as (

    select * from {{ ref('stg_mia_labels') }}
    where label in ('member', 'non_member')

),

scores as (

    select * from {{ ref('stg_text_scores') }}

),

method_scores as (

    select * from {{ ref('stg_text_method_scores') }}

),

oriented as (

    select
        scores.model,
        scores.item_kind,
        scores.item_id,
        scores.text_hash,
        coalesce(json_extract_string(scores.params, '$.scoring'), 'lmaudit') as scoring,
        {{ mia_oriented_text_scores('scores') }} as m
    from scores

),

labelled_scores as (

    select
        labels.corpus,
        oriented.model,
        oriented.scoring,
        oriented.m.estimator as score_name,
        labels.domain,
        labels.item_kind,
        labels.item_id,
        labels.label,
        oriented.m.member_score
    from oriented
    inner join labels
        on
            oriented.item_kind = labels.item_kind
            and oriented.item_id = labels.item_id
            and oriented.text_hash = labels.text_hash

),

labelled_method_scores as (

    select
        labels.corpus,
        method_scores.model,
        method_scores.scoring,
        'mia_' || method_scores.method as score_name,
        labels.domain,
        labels.item_kind,
        labels.item_id,
        labels.label,
        method_scores.member_score
    from method_scores
    inner join labels
        on
            method_scores.item_kind = labels.item_kind
            and method_scores.item_id = labels.item_id
            and method_scores.text_hash = labels.text_hash

),

final as (

    select * from labelled_scores
    where member_score is not null
    union all
    select * from labelled_method_scores
    where member_score is not null

)

select * from final
