-- Posteriors of generations, one row per (classifier, generation), with the generation's run. A posterior
-- counts only while the generation has the text it was computed from (text_hash = md5 of the current text).
-- Incremental by (classifier, run) (macros/mixture_incremental.sql): a group's rows are recomputed when its
-- outputs, its generations' texts or the classifier's name change; the md5 of the texts is computed for those
-- groups only.
{{ config(
    materialized='incremental',
    incremental_strategy='append',
    on_schema_change='fail',
    pre_hook="{{ propme_delete_stale(['classifier_id', 'run_id'], mixture_posterior_hashes()) }}"
) }}

with

todo as (

    {{ mixture_posteriors_to_compute() }}

),

outputs as (

    select
        classifier_id,
        item_id,
        probs,
        text_hash
    from {{ ref('stg_classifier_outputs') }}
    where item_kind = 'generation'

),

generations as (

    select
        generation_id,
        run_id,
        text
    from {{ ref('stg_generations') }}
    {% if is_incremental() -%}
        where run_id in (select todo.run_id from todo)
    {%- endif %}

),

classifiers as (

    select * from {{ ref('stg_classifiers') }}

),

final as (

    select
        outputs.classifier_id,
        classifiers.name as classifier_name,
        generations.run_id,
        outputs.item_id as generation_id,
        outputs.probs,
        todo.input_hash
    from outputs
    inner join classifiers on outputs.classifier_id = classifiers.classifier_id
    inner join generations
        on
            outputs.item_id = generations.generation_id
            and outputs.text_hash = md5(generations.text)
    inner join todo on outputs.classifier_id = todo.classifier_id and generations.run_id = todo.run_id

)

select * from final
