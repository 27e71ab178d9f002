-- One row per generation of a known run: what the explorer's generations table shows (`lmaudit explore`), in
-- its display order (ordinal), so that the explorer starts by copying this table instead of aggregating at
-- start. The tracing pass shown is the one int_generation_facts ranks first for the generation (traced before
-- untraced, then by trace_id); its domain comes from fct_generation_domains (built incrementally: the part
-- that reads every retrieved document). This table joins 200,000 rows at paper scale and is rebuilt whole.
with

generations as (

    select * from {{ ref('stg_generations') }}

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
    qualify row_number() over (partition by generation_id order by is_traced desc nulls last, trace_id asc) = 1

),

domains as (

    select * from {{ ref('fct_generation_domains') }}

),

final as (

    select
        row_number() over (
            order by
                generations.run_id asc,
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
        left(generations.text, 160) as preview
    from generations
    inner join runs on generations.run_id = runs.run_id
    left join facts on generations.generation_id = facts.generation_id
    left join domains on facts.generation_id = domains.generation_id and facts.trace_id = domains.trace_id

)

select * from final
