-- Posteriors of generations, one row per (classifier, generation), with the generation's run. A posterior
-- counts only while the generation has the text it was computed from (text_hash = md5 of the current text).
with

outputs as (

    select
        classifier_id,
        item_id,
        probs,
        text_hash
    from {{ ref('stg_classifier_outputs') }}
    where item_kind = 'generation'

),

final as (

    select
        outputs.classifier_id,
        classifiers.name as classifier_name,
        generations.run_id,
        outputs.item_id as generation_id,
        outputs.probs
    from outputs
    inner join {{ ref('stg_classifiers') }} as classifiers on outputs.classifier_id = classifiers.classifier_id
    inner join {{ ref('stg_generations') }} as generations
        on
            outputs.item_id = generations.generation_id
            and outputs.text_hash = md5(generations.text)

)

select * from final
