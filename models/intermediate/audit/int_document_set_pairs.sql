-- One row per (document set, propensity run, tracing pass) and its attack run: the set's own attack (a prefix
-- run made from the prompts drawn from the set's documents, `lmaudit audit documents --prefix-prompts`) of the
-- same model traced by the same pass; without one, the propme prefix run (prefixes from the whole corpus) that
-- the per-run marts pair the run with (int_propensity_pairs: same model and corpus, or named in var
-- propme_capability_pairs). attack_run_id is NULL, with a reason, when neither exists. A run with generations
-- this pass does not hold from their current text is partly traced: as in fct_setting_metrics, its share has no
-- value (the marts null f_p, or f_c, PM and te, with the reason here) rather than a share of only the traced
-- generations.
with

set_runs as (

    select * from {{ ref('int_document_set_runs') }}

),

propensity as (

    select * from set_runs
    where role = 'propensity'

),

per_run_pairs as (

    select * from {{ ref('int_propensity_pairs') }}

),

set_attacks as (

    select
        propensity.document_set,
        propensity.run_id as propensity_run_id,
        propensity.trace_id,
        attacks.run_id,
        attacks.role,
        attacks.n_generations,
        attacks.n_traced_generations
    from set_runs as propensity
    inner join set_runs as attacks
        on
            propensity.document_set = attacks.document_set
            and propensity.model = attacks.model
            and propensity.trace_id = attacks.trace_id
    where propensity.role = 'propensity' and attacks.role = 'set_attack'

),

corpus_attacks as (

    select
        propensity.document_set,
        propensity.run_id as propensity_run_id,
        propensity.trace_id,
        attacks.run_id,
        attacks.role,
        attacks.n_generations,
        attacks.n_traced_generations
    from set_runs as propensity
    inner join per_run_pairs
        on
            propensity.run_id = per_run_pairs.propensity_run_id
            and propensity.trace_id = per_run_pairs.trace_id
    inner join set_runs as attacks
        on
            propensity.document_set = attacks.document_set
            and per_run_pairs.capability_run_id = attacks.run_id
            and propensity.trace_id = attacks.trace_id
    where propensity.role = 'propensity' and attacks.role = 'corpus_attack'

),

attacks as (

    select * from set_attacks
    union all
    select * from corpus_attacks

),

ranked as (

    select
        propensity.document_set,
        propensity.run_id as propensity_run_id,
        propensity.trace_id,
        propensity.model,
        propensity.setting as propensity_setting,
        attacks.run_id as attack_run_id,
        attacks.role as attack_kind,
        coalesce(propensity.n_traced_generations < propensity.n_generations, false) as propensity_partly_traced,
        coalesce(attacks.n_traced_generations < attacks.n_generations, false) as attack_partly_traced,
        propensity.n_traced_generations as n_traced_p,
        propensity.n_generations as n_run_generations_p,
        attacks.n_traced_generations as n_traced_c,
        attacks.n_generations as n_run_generations_c,
        row_number() over (
            partition by propensity.document_set, propensity.run_id, propensity.trace_id
            order by case when attacks.role = 'set_attack' then 0 else 1 end, attacks.run_id
        ) as preference
    from propensity
    left join attacks
        on
            propensity.document_set = attacks.document_set
            and propensity.run_id = attacks.propensity_run_id
            and propensity.trace_id = attacks.trace_id

),

final as (

    select
        document_set,
        propensity_run_id,
        trace_id,
        model,
        propensity_setting,
        attack_run_id,
        attack_kind,
        propensity_partly_traced,
        attack_partly_traced,
        case
            when propensity_partly_traced
                then
                    'partly traced: ' || n_traced_p || ' of ' || n_run_generations_p || ' generations of run '
                    || propensity_run_id || ' traced from their current text by this pass; re-run lmaudit trace --run '
                    || propensity_run_id
            when attack_run_id is null
                then
                    'no prefix run of this model traced by this pass: build the set''s prompts with lmaudit '
                    || 'audit documents --prefix-prompts N, generate and trace them'
            when attack_partly_traced
                then
                    'partly traced: ' || n_traced_c || ' of ' || n_run_generations_c
                    || ' generations of the attack run ' || attack_run_id
                    || ' traced from their current text by this pass; re-run lmaudit trace --run ' || attack_run_id
        end as null_reason
    from ranked
    where preference = 1

)

select * from final
