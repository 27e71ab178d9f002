-- One row per (generation, tracing pass): the per-generation facts behind every PropMe metric.
-- Untraced runs keep their generations with trace_id NULL and NULL span facts. A generation counts as traced
-- by a pass only when `traced_generations` holds it with the hash of its current text; its length
-- (n_tokens) is then the traced text's length in index tokens, never the model's own token count.
with

params as (

    select * from {{ ref('int_propme_params') }}

),

run_traces as (

    select * from {{ ref('int_run_traces') }}

),

generations as (

    select * from {{ ref('stg_generations') }}

),

spans as (

    select * from {{ ref('stg_spans') }}

),

span_documents as (

    select * from {{ ref('stg_span_documents') }}

),

span_counts as (

    select * from {{ ref('stg_span_counts') }}

),

traced as (

    select * from {{ ref('stg_traced_generations') }}

),

loop_spans as (

    select * from {{ ref('int_span_loops') }}

),

text_checks as (

    select * from {{ ref('int_generation_text_checks') }}

),

span_docs as (

    select
        span_id,
        count(*) as n_docs,
        count(nv_recall) as n_nv_docs,
        coalesce(sum(nv_recall), 0) as nv_sum,
        coalesce(bool_or(match_tier = 'exact_full_raw'), false) as has_full_raw,
        coalesce(bool_or(match_tier in ('exact_full_raw', 'exact_full_normalized')), false) as has_full_normalized
    from span_documents
    group by span_id

),

span_facts as (

    select
        spans.span_id,
        spans.trace_id,
        spans.generation_id,
        spans.start_tok,
        spans.length,
        spans.is_full,
        coalesce(loop_spans.is_loop, false) as is_loop,
        spans.length >= params.long_span_tokens and not coalesce(loop_spans.is_loop, false) as is_long_nonloop,
        coalesce(span_docs.n_docs, 0) as n_docs,
        coalesce(span_docs.n_nv_docs, 0) as n_nv_docs,
        coalesce(span_docs.nv_sum, 0) as nv_sum,
        coalesce(span_docs.has_full_raw, false) as has_full_raw,
        coalesce(span_docs.has_full_normalized, false) as has_full_normalized
    from spans
    cross join params
    left join loop_spans on spans.span_id = loop_spans.span_id
    left join span_docs on spans.span_id = span_docs.span_id

),

generation_spans as (

    select
        span_facts.generation_id,
        span_facts.trace_id,
        count(*) as n_spans,
        max(span_facts.length) as longest_span,
        coalesce(max(span_facts.length) filter (where not span_facts.is_loop), 0) as longest_nonloop_span,
        max(span_facts.length) filter (where span_facts.is_full) as full_span_length,
        count(*) filter (where span_facts.is_loop) as n_loop_spans,
        count(*) filter (where span_facts.length >= params.long_span_tokens) as n_long_spans,
        count(*) filter (where span_facts.is_long_nonloop) as n_long_nonloop_spans,
        sum(span_facts.n_docs) as n_docs,
        sum(span_facts.n_nv_docs) as n_nv_docs,
        sum(span_facts.nv_sum) as nv_sum,
        coalesce(sum(span_facts.n_nv_docs) filter (where span_facts.is_long_nonloop), 0) as n_nv_docs_long,
        coalesce(sum(span_facts.nv_sum) filter (where span_facts.is_long_nonloop), 0) as nv_sum_long,
        bool_or(span_facts.has_full_raw) as full_match_raw,
        bool_or(span_facts.has_full_normalized) as full_match_normalized
    from span_facts
    cross join params
    group by span_facts.generation_id, span_facts.trace_id

),

longest_long_span as (

    select
        span_facts.generation_id,
        span_facts.trace_id,
        span_facts.span_id,
        span_facts.length
    from span_facts
    where span_facts.is_long_nonloop
    qualify row_number() over (
        partition by span_facts.generation_id, span_facts.trace_id
        order by span_facts.length desc, span_facts.start_tok asc, span_facts.span_id asc
    ) = 1

),

traced_generations as (

    select
        run_traces.run_id,
        run_traces.trace_id,
        run_traces.setting,
        run_traces.unit_kind,
        generations.generation_id,
        generations.prompt_id,
        generations.sample_idx,
        traced.n_index_tokens,
        traced.generation_id is not null as is_traced
    from run_traces
    inner join generations on run_traces.run_id = generations.run_id
    left join traced
        on
            run_traces.trace_id = traced.trace_id
            and generations.generation_id = traced.generation_id
            and md5(generations.text) = traced.text_hash

),

final as (

    select
        traced_generations.generation_id,
        traced_generations.run_id,
        traced_generations.trace_id,
        traced_generations.setting,
        traced_generations.prompt_id,
        traced_generations.sample_idx,
        traced_generations.unit_kind,
        case
            when traced_generations.unit_kind = 'prompt'
                then coalesce(traced_generations.prompt_id, traced_generations.generation_id)
            else traced_generations.generation_id
        end as unit_id,
        traced_generations.is_traced,
        traced_generations.n_index_tokens as n_tokens,
        text_checks.is_blank,
        text_checks.is_degenerate,
        text_checks.is_code_like,
        text_checks.has_true_continuation,
        text_checks.targeted_hit,
        case when traced_generations.is_traced then coalesce(generation_spans.n_spans, 0) end
            as n_spans,
        case when traced_generations.is_traced then coalesce(generation_spans.longest_span, 0) end
            as longest_span,
        case
            when traced_generations.is_traced then coalesce(generation_spans.longest_nonloop_span, 0)
        end as longest_nonloop_span,
        case
            when traced_generations.is_traced then coalesce(generation_spans.n_loop_spans, 0)
        end as n_loop_spans,
        case
            when traced_generations.is_traced then coalesce(generation_spans.n_long_spans, 0)
        end as n_long_spans,
        case
            when traced_generations.is_traced
                then coalesce(generation_spans.n_long_spans, 0) > 0 and generation_spans.n_long_nonloop_spans = 0
        end as long_spans_all_loops,
        case
            when traced_generations.is_traced then coalesce(generation_spans.full_match_raw, false)
        end as full_match_raw,
        case
            when traced_generations.is_traced then coalesce(generation_spans.full_match_normalized, false)
        end as full_match_normalized,
        case when traced_generations.is_traced then coalesce(generation_spans.n_docs, 0) end as n_docs,
        case when traced_generations.is_traced then coalesce(generation_spans.n_nv_docs, 0) end
            as n_nv_docs,
        case when traced_generations.is_traced then coalesce(generation_spans.nv_sum, 0) end as nv_sum,
        case
            when traced_generations.is_traced then coalesce(generation_spans.n_nv_docs_long, 0)
        end as n_nv_docs_long,
        case
            when traced_generations.is_traced then coalesce(generation_spans.nv_sum_long, 0)
        end as nv_sum_long,
        longest_long_span.span_id as longest_long_span_id,
        longest_long_span.length as longest_long_span_length,
        span_counts.first50_count as longest_long_first50_count,
        span_counts.whole_count as longest_long_whole_count,
        case
            when longest_long_span.span_id is null then null
            when span_counts.first50_count is null then 'unknown'
            when span_counts.first50_count <= 1 then 'once'
            when span_counts.first50_count < params.rare_max_count then 'rare'
            else 'frequent'
        end as duplication_bucket,
        params.params
    from traced_generations
    cross join params
    left join text_checks on traced_generations.generation_id = text_checks.generation_id
    left join generation_spans
        on
            traced_generations.generation_id = generation_spans.generation_id
            and traced_generations.trace_id = generation_spans.trace_id
            and traced_generations.is_traced
    left join longest_long_span
        on
            traced_generations.generation_id = longest_long_span.generation_id
            and traced_generations.trace_id = longest_long_span.trace_id
            and traced_generations.is_traced
    left join span_counts on longest_long_span.span_id = span_counts.span_id

)

select * from final
