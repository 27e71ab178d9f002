-- Membership scores of labelled reference documents under each scored model, one row per (model, method,
-- document), oriented so that HIGHER means "looks more like training data": -loss, -zlib, Min-K%, Min-K%++
-- and -(loss / reference-model loss). A score counts only while the document has the text it was computed
-- from (text_hash = md5 of the current text). `scoring` is the convention the text was scored under
-- (authors or lmaudit, from `params`; rows written before conventions existed are lmaudit's). The other
-- Table-2 baselines (DC-PDD, ReCaLL, GradNorm, Joint-Logit, Neighbor) come from text_method_scores, already oriented
-- (member_score), as mia_<method>.
with

scores as (

    select * from {{ ref('stg_text_scores') }}
    where item_kind = 'reference'

),

method_scores as (

    select * from {{ ref('stg_text_method_scores') }}
    where item_kind = 'reference'

),

reference_docs as (

    select * from {{ ref('stg_reference_docs') }}

),

current_scores as (

    select
        scores.model,
        scores.item_id as ref_doc_id,
        reference_docs.domain,
        scores.loss,
        scores.zlib_loss,
        scores.mink,
        scores.minkpp,
        scores.ref_loss,
        coalesce(json_extract_string(scores.params, '$.scoring'), 'lmaudit') as scoring
    from scores
    inner join reference_docs
        on
            scores.item_id = reference_docs.ref_doc_id
            and scores.text_hash = md5(reference_docs.text)

),

methods as (

    select
        current_scores.model,
        current_scores.scoring,
        current_scores.ref_doc_id,
        current_scores.domain,
        {{ mia_oriented_text_scores('current_scores') }} as m
    from current_scores

),

current_method_scores as (

    select
        method_scores.model,
        method_scores.scoring,
        'mia_' || method_scores.method as estimator,
        method_scores.item_id as ref_doc_id,
        reference_docs.domain,
        method_scores.member_score
    from method_scores
    inner join reference_docs
        on
            method_scores.item_id = reference_docs.ref_doc_id
            and method_scores.text_hash = md5(reference_docs.text)
    where method_scores.member_score is not null

),

final as (

    select
        methods.model,
        methods.scoring,
        methods.m.estimator,
        methods.ref_doc_id,
        methods.domain,
        methods.m.member_score
    from methods
    where methods.m.member_score is not null
    union all
    select
        model,
        scoring,
        estimator,
        ref_doc_id,
        domain,
        member_score
    from current_method_scores

)

select * from final
