-- One row per generation of a known run: what the explorer's generations table shows (`lmaudit explore`), in
-- its display order (ordinal), so that the explorer starts by copying this table instead of aggregating at
-- start. The rows are int_explore_generations' (incremental by run); this copy leaves out its input_hash, so
-- the explorer's columns stay those it aggregated at start before (a copy of 200,000 rows, not a re-join).
with

generations as (

    select
        ordinal,
        generation_id,
        run_id,
        model,
        setting,
        prompt_id,
        sample_idx,
        trace_id,
        is_traced,
        n_tokens,
        n_spans,
        longest_span,
        nv_recall,
        full_match,
        full_match_raw,
        is_blank,
        domain,
        preview
    from {{ ref('int_explore_generations') }}

),

final as (

    select * from generations

)

select * from final
