-- One row per (document set, run, tracing pass): every traced run whose generations the set's numbers count.
-- A pass counts when it traced against the set's corpus (doc_ix is that corpus's numbering) and holds the
-- generation with the hash of its current text, as for the per-run PropMe metrics. Role: set_attack (a run
-- generated from the prefix prompts drawn from the set's documents, whatever its purpose), corpus_attack (a
-- propme run of the capability setting, prefixes from the whole corpus) or propensity (any other propme run).
-- Another set's attack (its prefixes drawn from that set's documents only) is no run of this set, even when it
-- was generated with --purpose propme: it is neither a corpus-wide attack nor a propensity run.
with

params as (

    select * from {{ ref('int_propme_params') }}

),

document_sets as (

    select * from {{ ref('stg_document_sets') }}

),

runs as (

    select * from {{ ref('stg_runs') }}

),

generations as (

    select * from {{ ref('stg_generations') }}

),

prompts as (

    select * from {{ ref('stg_prompts') }}

),

traced as (

    select * from {{ ref('stg_traced_generations') }}

),

trace_runs as (

    select * from {{ ref('stg_trace_runs') }}

),

sets as (

    select
        document_set,
        any_value(corpus_id) as corpus_id,
        any_value(prompt_set) as prompt_set,
        count(*) as n_documents
    from document_sets
    group by document_set

),

attack_runs as (

    select distinct
        sets.document_set,
        generations.run_id
    from sets
    inner join prompts on sets.prompt_set = prompts.prompt_set
    inner join generations on prompts.prompt_id = generations.prompt_id

),

any_set_attacks as (

    select distinct run_id
    from attack_runs

),

run_sizes as (

    select
        run_id,
        count(*) as n_generations
    from generations
    group by run_id

),

run_passes as (

    select
        generations.run_id,
        traced.trace_id,
        count(*) as n_traced_generations
    from traced
    inner join generations
        on
            traced.generation_id = generations.generation_id
            and traced.text_hash = md5(generations.text)
    group by generations.run_id, traced.trace_id

),

final as (

    select
        sets.document_set,
        sets.corpus_id,
        runs.run_id,
        run_passes.trace_id,
        runs.model,
        runs.setting,
        runs.purpose,
        case
            when attack_runs.run_id is not null then 'set_attack'
            when runs.setting = params.capability_setting then 'corpus_attack'
            else 'propensity'
        end as role,
        case
            when list_contains(params.prompt_free_settings, runs.setting) then 'generation' else 'prompt'
        end as unit_kind,
        run_sizes.n_generations,
        run_passes.n_traced_generations
    from sets
    cross join params
    inner join trace_runs on sets.corpus_id = trace_runs.corpus_id
    inner join run_passes on trace_runs.trace_id = run_passes.trace_id
    inner join runs on run_passes.run_id = runs.run_id
    left join attack_runs
        on
            sets.document_set = attack_runs.document_set
            and runs.run_id = attack_runs.run_id
    left join run_sizes on runs.run_id = run_sizes.run_id
    where
        attack_runs.run_id is not null
        or (runs.purpose = 'propme' and runs.run_id not in (select any_set_attacks.run_id from any_set_attacks))

)

select * from final
