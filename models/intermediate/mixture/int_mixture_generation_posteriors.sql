-- Posteriors of generations, one row per (classifier, generation), with the generation's run.
with

outputs as (

    select
        classifier_id,
        item_id,
        probs
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
    inner join {{ ref('stg_generations') }} as generations on outputs.item_id = generations.generation_id

)

select * from final
