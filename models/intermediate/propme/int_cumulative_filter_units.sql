-- One row per (run, tracing pass, unit, metric, filter step): numerator and denominator after the filters
-- are applied one after another (docs/propme-analyses.md): 1 none, 2 + degenerate, 3 + code-like,
-- 4 + repetition loops, 5 + rare spans. `metric_key` = metric || '@' || step feeds the bootstrap.
with

params as (

    select * from {{ ref('int_propme_params') }}

),

facts as (

    select * from {{ ref('int_generation_facts') }}

),

spans as (

    select * from {{ ref('stg_spans') }}

),

loop_spans as (

    select * from {{ ref('int_span_loops') }}

),

full_loops as (

    select
        spans.generation_id,
        spans.trace_id,
        bool_or(coalesce(loop_spans.is_loop, false)) as full_span_is_loop
    from spans
    left join loop_spans on spans.span_id = loop_spans.span_id
    where spans.is_full
    group by spans.generation_id, spans.trace_id

),

steps as (

    select v.*
    from (
        values
        (1, 'none'),
        (2, 'degenerate'),
        (3, 'code_like'),
        (4, 'repetition_loops'),
        (5, 'rare_spans')
    ) as v (step, step_name)

),

flagged as (

    select
        facts.run_id,
        facts.trace_id,
        facts.unit_id,
        facts.unit_kind,
        coalesce(facts.is_degenerate, false) as is_degenerate,
        coalesce(facts.is_code_like, false) as is_code_like,
        coalesce(facts.full_match_raw, false) as fm_raw,
        coalesce(facts.n_tokens, 0) >= params.long_span_tokens as is_long,
        coalesce(full_loops.full_span_is_loop, false) as full_loop,
        coalesce(facts.longest_span, 0) as longest_span,
        coalesce(facts.longest_nonloop_span, 0) as longest_nonloop_span,
        coalesce(facts.duplication_bucket in ('once', 'rare'), false) as is_rare,
        coalesce(facts.nv_sum, 0) as nv_sum,
        coalesce(facts.n_nv_docs, 0) as n_nv_docs,
        params.mid_span_tokens,
        params.long_span_tokens
    from facts
    cross join params
    left join full_loops
        on facts.generation_id = full_loops.generation_id and facts.trace_id = full_loops.trace_id
    where facts.is_traced

),

per_step as (

    select
        flagged.*,
        steps.step,
        steps.step_name,
        (steps.step < 2 or not flagged.is_degenerate) and (steps.step < 3 or not flagged.is_code_like) as kept,
        flagged.fm_raw and (steps.step < 4 or not flagged.full_loop) as fmr_hit,
        flagged.fm_raw and flagged.is_long and (steps.step < 4 or not flagged.full_loop)
        and (steps.step < 5 or flagged.is_rare) as fmr50_hit,
        case when steps.step < 4 then flagged.longest_span else flagged.longest_nonloop_span end as span_len,
        steps.step < 5 or flagged.is_rare as rare_ok
    from flagged
    cross join steps

),

per_unit as (

    select
        run_id,
        trace_id,
        unit_id,
        step,
        any_value(step_name) as step_name,
        any_value(unit_kind) as unit_kind,
        count(*) as n_gen,
        count(*) filter (where kept) as n_kept,
        count(*) filter (where kept and fmr_hit) as fmr_hits,
        count(*) filter (where kept and fmr50_hit) as fmr50_hits,
        coalesce(sum(span_len) filter (where kept), 0) as als_sum,
        count(*) filter (where kept and span_len >= mid_span_tokens) as r20_hits,
        count(*) filter (where kept and span_len >= long_span_tokens and rare_ok) as r50_hits,
        coalesce(sum(nv_sum) filter (where kept), 0) as nv_sum,
        coalesce(sum(n_nv_docs) filter (where kept), 0) as nv_pairs
    from per_step
    group by run_id, trace_id, unit_id, step

),

metric_lists as (

    select
        run_id,
        trace_id,
        unit_id,
        unit_kind,
        step,
        step_name,
        n_gen,
        [
            { 'metric': 'fmr', 'num': fmr_hits, 'den': n_kept },
            { 'metric': 'fmr50', 'num': fmr50_hits, 'den': n_kept },
            { 'metric': 'als', 'num': als_sum, 'den': n_kept },
            { 'metric': 'nvr', 'num': nv_sum, 'den': nv_pairs },
            { 'metric': 'r20', 'num': r20_hits, 'den': n_kept },
            { 'metric': 'r50', 'num': r50_hits, 'den': n_kept }
        ] as metric_rows,
        n_kept
    from per_unit

),

unpivoted as (

    select
        run_id,
        trace_id,
        unit_id,
        unit_kind,
        step,
        step_name,
        n_gen,
        n_kept,
        unnest(metric_rows) as m
    from metric_lists

),

final as (

    select
        unpivoted.run_id,
        unpivoted.trace_id,
        unpivoted.unit_id,
        unpivoted.unit_kind,
        unpivoted.m.metric,
        unpivoted.step,
        unpivoted.step_name,
        unpivoted.m.metric || '@' || unpivoted.step as metric_key,
        cast(unpivoted.m.num as double) as num,
        cast(unpivoted.m.den as double) as den,
        unpivoted.n_gen as n_generations,
        cast(unpivoted.n_kept as bigint) as n_eligible
    from unpivoted

)

select * from final
