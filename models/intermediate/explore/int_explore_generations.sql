-- One row per generation of a known run: what the explorer's generations table shows (`lmaudit explore`), in
-- its display order (ordinal), with the run's input_hash; fct_explore_generations is this table without the
-- hash, which the explorer copies at start instead of aggregating. The tracing pass shown is the one
-- int_generation_facts ranks first for the generation (traced before untraced, then by trace_id); its domain
-- comes from fct_generation_domains (built incrementally: the part that reads every retrieved document).
-- Incremental by run (macros/explore_domain_inputs.sql): a run's rows are recomputed when its generations, its
-- model or setting, or its facts or domains change; rows of vanished or changed runs are deleted first, and the
-- post-hook moves the ordinals of kept runs after an added or removed one.
{{ config(
    materialized='incremental',
    incremental_strategy='append',
    on_schema_change='fail',
    pre_hook="{{ propme_delete_stale(['run_id'], explore_generation_run_hashes()) }}",
    post_hook="{{ explore_shift_ordinals() }}"
) }}

with

run_hashes as (

    {{ explore_generation_run_hashes() }}

),

todo as (

    select * from run_hashes
    {{ propme_rows_to_compute('run_hashes', ['run_id']) }}

),

offsets as (

    {{ explore_run_offsets() }}

),

generations as (

    select * from {{ ref('stg_generations') }}
    where run_id in (select todo.run_id from todo)

),

runs as (

    select
        run_id,
        model,
        setting
    from {{ ref('stg_runs') }}

),

facts as (

    select *
    from {{ ref('int_generation_facts') }}
    where generation_id in (select generations.generation_id from generations)
    qualify row_number() over (partition by generation_id order by is_traced desc nulls last, trace_id asc) = 1

),

domains as (

    select * from {{ ref('fct_generation_domains') }}

),

final as (

    select
        offsets.run_offset + row_number() over (
            partition by generations.run_id
            order by
                generations.prompt_id asc nulls first,
                generations.sample_idx asc,
                generations.generation_id asc
        ) - 1 as ordinal,
        generations.generation_id,
        generations.run_id,
        runs.model,
        runs.setting,
        generations.prompt_id,
        generations.sample_idx,
        facts.trace_id,
        coalesce(facts.is_traced, false) as is_traced,
        facts.n_tokens,
        facts.n_spans,
        facts.longest_span,
        case when facts.n_nv_docs > 0 then facts.nv_sum / facts.n_nv_docs end as nv_recall,
        facts.full_match_normalized as full_match,
        facts.full_match_raw,
        facts.is_blank,
        domains.domain,
        left(generations.text, 160) as preview,
        todo.input_hash
    from generations
    inner join runs on generations.run_id = runs.run_id
    inner join todo on generations.run_id = todo.run_id
    inner join offsets on generations.run_id = offsets.run_id
    left join facts on generations.generation_id = facts.generation_id
    left join domains on facts.generation_id = domains.generation_id and facts.trace_id = domains.trace_id

)

select * from final
