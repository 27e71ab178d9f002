-- One row per (propensity run, tracing pass) and its capability run: by default the capability-setting run
-- (var propme_capability_setting, 'prefix') of the same model and corpus traced by the same pass; the var
-- propme_capability_pairs names other pairs. capability_run_id is NULL, with a reason, when there is none.
with

params as (

    select * from {{ ref('int_propme_params') }}

),

run_traces as (

    select * from {{ ref('int_run_traces') }}

),

propensity as (

    select * from run_traces
    where setting_kind = 'propensity'

),

capability as (

    select * from run_traces
    where setting_kind = 'capability'

),

override_rows as (

    select
        unnest(
            from_json(
                params.capability_pairs_json,
                '[{"propensity_run_id": "VARCHAR", "capability_run_id": "VARCHAR"}]'
            )
        ) as pair
    from params

),

overrides as (

    select
        override_rows.pair.propensity_run_id,
        override_rows.pair.capability_run_id
    from override_rows

),

default_matches as (

    select
        propensity.run_id as propensity_run_id,
        propensity.trace_id,
        capability.run_id as capability_run_id,
        'default' as pairing
    from propensity
    inner join capability
        on
            propensity.model = capability.model
            and propensity.corpus_id = capability.corpus_id
            and propensity.trace_id is not distinct from capability.trace_id
    where propensity.run_id not in (select overrides.propensity_run_id from overrides)

),

override_matches as (

    select
        propensity.run_id as propensity_run_id,
        propensity.trace_id,
        capability.run_id as capability_run_id,
        'override' as pairing
    from propensity
    inner join overrides on propensity.run_id = overrides.propensity_run_id
    left join capability
        on
            overrides.capability_run_id = capability.run_id
            and propensity.trace_id is not distinct from capability.trace_id

),

matches as (

    select * from default_matches
    union all
    select * from override_matches

),

capability_models as (

    select distinct
        model,
        corpus_id
    from capability

),

final as (

    select
        propensity.run_id as propensity_run_id,
        propensity.trace_id,
        matches.capability_run_id,
        coalesce(matches.pairing, 'default') as pairing,
        case
            when matches.capability_run_id is not null then null
            when propensity.trace_id is null and propensity.n_generations = 0 then 'f_p: empty run: no generations'
            when propensity.trace_id is null then 'f_p: not traced: run lmaudit trace --run ' || propensity.run_id
            when matches.pairing = 'override'
                then 'capability run named in propme_capability_pairs not found for this tracing pass'
            when capability_models.model is not null
                then 'no ' || params.capability_setting || ' run of the same model and corpus in this tracing pass'
            else 'no ' || params.capability_setting || ' run of the same model and corpus'
        end as null_reason
    from propensity
    cross join params
    left join matches
        on
            propensity.run_id = matches.propensity_run_id
            and propensity.trace_id is not distinct from matches.trace_id
    left join capability_models
        on
            propensity.model = capability_models.model
            and propensity.corpus_id = capability_models.corpus_id

)

select * from final
