-- Training checkpoints among the models the warehouse has seen: one row per model (a path or hub name) whose
-- training step is known, from the revision its runs recorded (step<N>, written for a checkpoint folder, see
-- ingest/checkpoints.py) or else from a sandbox checkpoint path (<model>/checkpoints/step-NNNNNN). base_model
-- is the final model the checkpoint belongs to: the path without its /checkpoints/step-N part.
with

runs as (

    select
        model,
        revision
    from {{ ref('stg_runs') }}

),

scored as (

    select distinct model
    from {{ ref('stg_text_scores') }}

),

models as (

    select model from runs
    union
    select model from scored

),

from_revision as (

    select
        model,
        max(try_cast(regexp_extract(revision, '^step-?([0-9]+)$', 1) as integer)) as step
    from runs
    group by model

),

final as (

    select
        models.model,
        regexp_replace(models.model, '/checkpoints/step-[0-9]+/?$', '') as base_model,
        coalesce(
            from_revision.step,
            try_cast(regexp_extract(models.model, '/checkpoints/step-([0-9]+)/?$', 1) as integer)
        ) as step
    from models
    left join from_revision on models.model = from_revision.model

)

select * from final
where step is not null
