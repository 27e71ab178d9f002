-- Cross-fitted posteriors of reference documents, one row per (classifier, reference document), with the
-- document's true domain as an index into the classifier's domains and whether its fold is the
-- classifier's calibration fold (classifiers.params -> calibration_fold; those documents calibrate and are
-- left out of the confusion matrix).
with

outputs as (

    select
        classifier_id,
        item_id,
        fold,
        probs
    from {{ ref('stg_classifier_outputs') }}
    where item_kind = 'reference'

),

classifiers as (

    select
        classifier_id,
        name,
        domains,
        try_cast(json_extract(params, '$.calibration_fold') as integer) as calibration_fold
    from {{ ref('stg_classifiers') }}

),

final as (

    select
        outputs.classifier_id,
        classifiers.name as classifier_name,
        outputs.item_id as ref_doc_id,
        refs.domain as true_domain,
        cast(list_position(classifiers.domains, refs.domain) - 1 as integer) as true_index,
        outputs.fold,
        coalesce(outputs.fold = classifiers.calibration_fold, false) as is_calibration,
        outputs.probs
    from outputs
    inner join classifiers on outputs.classifier_id = classifiers.classifier_id
    inner join {{ ref('stg_reference_docs') }} as refs on outputs.item_id = refs.ref_doc_id
    where list_position(classifiers.domains, refs.domain) is not null

)

select * from final
