-- Mixture estimates by prompt style (LLMSurgeon's Table 5): one row per mixture run, classifier, estimator
-- and documented model, with the run's prompt style and the overlap accuracy against the documented mixture
-- (fct_mixture_evaluation). Styles: the authors' prompt lists (settings llmsurgeon_<style>: neutral,
-- instructional, expository, conversational, coding, category), lmaudit's own neutral prefixes (setting
-- neutral, style lmaudit_neutral) and prompt-free sampling (setting unconditional). Only runs marked
-- purpose = mixture (the mixture presets) count: a PropMe run samples for another question.
with

evaluation as (

    select * from {{ ref('fct_mixture_evaluation') }}
    where run_id is not null

),

runs as (

    select * from {{ ref('stg_runs') }}
    where purpose = 'mixture'

),

styled as (

    select
        evaluation.run_model as model,
        {{ model_name('evaluation.run_model') }} as model_name,
        evaluation.documented_model,
        case
            when starts_with(runs.setting, 'llmsurgeon_') then substr(runs.setting, 12)
            when runs.setting = 'neutral' then 'lmaudit_neutral'
            else runs.setting
        end as style,
        case
            when starts_with(runs.setting, 'llmsurgeon_') then 'llmsurgeon'
            when runs.setting = 'neutral' then 'lmaudit'
            else 'none'
        end as prompt_source,
        runs.setting,
        evaluation.run_id,
        runs.temperature,
        runs.top_p,
        evaluation.classifier_id,
        evaluation.classifier_name,
        evaluation.estimator,
        evaluation.n_generations,
        evaluation.domains,
        evaluation.truth,
        evaluation.estimates,
        evaluation.overlap_accuracy,
        evaluation.mae
    from evaluation
    inner join runs
        on evaluation.run_id = runs.run_id

),

final as (

    select * from styled

)

select * from final
