-- One row per (generation, tracing pass): the per-generation facts behind every PropMe metric.
-- Untraced runs keep their generations with trace_id NULL and NULL span facts. A generation counts as traced
-- by a pass only when `traced_generations` holds it with the hash of its current text; its length
-- (n_tokens) is then the traced text's length in index tokens, never the model's own token count.
-- A blank generation (empty or whitespace-only) never matches, as in PropMe's released code, which strips every
-- output before tracing: its spans are ignored (longest span 0, no full match, no documents), it stays in every
-- denominator; var propme_blank_outputs_match: true traces it like any text.
-- Incremental (macros/propme_incremental.sql): a later build computes only the (generation, pass) rows that are
-- new or whose inputs changed (text, tracing pass, text checks, any propme_* var); rows of vanished or changed
-- inputs are deleted first, so the table equals a full refresh.
-- Memory (BENCHMARKS.md "Build memory and time at 1x-16x"): span_documents is read once and streamed; no CTE
-- over spans or loops is materialized (DuckDB keeps a CTE read twice as a temporary table: 40M spans at 8x paper
-- scale, which spilled), so the longest long span reads the spans and the loop rows of long spans again with a
-- filter (~1 % of them) instead of reusing span_facts; the generations' texts are hashed before they meet a join.
-- generation_spans (one row per generation and pass) is materialized: DuckDB then finishes the aggregate over all
-- spans and documents before the final joins start, instead of holding their hash tables at the same time (at 8x
-- under a 6GB budget the unmaterialized query ran out of memory, 3.3/3.3 GiB pinned; materialized it spilled and
-- finished).
{{ config(
    materialized='incremental',
    incremental_strategy='append',
    on_schema_change='fail',
    pre_hook="{{ propme_delete_stale(['generation_id', 'trace_id'], propme_generation_fact_inputs()) }}"
) }}

with

params as (

    select * from {{ ref('int_propme_params') }}

),

inputs as (

    {{ propme_generation_fact_inputs() }}

),

todo as (

    select * from inputs
    {{ propme_rows_to_compute('inputs', ['generation_id', 'trace_id']) }}

),

spans as not materialized (

    select * from {{ ref('stg_spans') }}
    {% if is_incremental() %}where generation_id in (select todo.generation_id from todo){% endif %}

),

span_documents as (

    select * from {{ ref('stg_span_documents') }}
    {% if is_incremental() %}where span_id in (select spans.span_id from spans){% endif %}

),

span_counts as (

    select * from {{ ref('stg_span_counts') }}
    {% if is_incremental() %}where span_id in (select spans.span_id from spans){% endif %}

),

loop_spans as not materialized (

    select * from {{ ref('int_span_loops') }}
    {% if is_incremental() %}where generation_id in (select todo.generation_id from todo){% endif %}

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

generation_spans as materialized (

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

long_loop_spans as (

    select
        loop_spans.span_id,
        loop_spans.is_loop
    from loop_spans
    cross join params
    where loop_spans.length >= params.long_span_tokens

),

longest_long_span as (

    select
        spans.generation_id,
        spans.trace_id,
        spans.span_id,
        spans.length
    from spans
    cross join params
    left join long_loop_spans on spans.span_id = long_loop_spans.span_id
    where spans.length >= params.long_span_tokens and not coalesce(long_loop_spans.is_loop, false)
    qualify row_number() over (
        partition by spans.generation_id, spans.trace_id
        order by spans.length desc, spans.start_tok asc, spans.span_id asc
    ) = 1

),

final as (

    select
        todo.generation_id,
        todo.run_id,
        todo.trace_id,
        todo.setting,
        todo.prompt_id,
        todo.sample_idx,
        todo.unit_kind,
        case
            when todo.unit_kind = 'prompt'
                then coalesce(todo.prompt_id, todo.generation_id)
            else todo.generation_id
        end as unit_id,
        todo.is_traced,
        todo.n_index_tokens as n_tokens,
        text_checks.is_blank,
        text_checks.is_degenerate,
        text_checks.is_code_like,
        text_checks.has_true_continuation,
        text_checks.targeted_hit,
        case when todo.is_traced then coalesce(generation_spans.n_spans, 0) end
            as n_spans,
        case when todo.is_traced then coalesce(generation_spans.longest_span, 0) end
            as longest_span,
        case
            when todo.is_traced then coalesce(generation_spans.longest_nonloop_span, 0)
        end as longest_nonloop_span,
        case
            when todo.is_traced then coalesce(generation_spans.n_loop_spans, 0)
        end as n_loop_spans,
        case
            when todo.is_traced then coalesce(generation_spans.n_long_spans, 0)
        end as n_long_spans,
        case
            when todo.is_traced
                then coalesce(generation_spans.n_long_spans, 0) > 0 and generation_spans.n_long_nonloop_spans = 0
        end as long_spans_all_loops,
        case
            when todo.is_traced then coalesce(generation_spans.full_match_raw, false)
        end as full_match_raw,
        case
            when todo.is_traced then coalesce(generation_spans.full_match_normalized, false)
        end as full_match_normalized,
        case when todo.is_traced then coalesce(generation_spans.n_docs, 0) end as n_docs,
        case when todo.is_traced then coalesce(generation_spans.n_nv_docs, 0) end
            as n_nv_docs,
        case when todo.is_traced then coalesce(generation_spans.nv_sum, 0) end as nv_sum,
        case
            when todo.is_traced then coalesce(generation_spans.n_nv_docs_long, 0)
        end as n_nv_docs_long,
        case
            when todo.is_traced then coalesce(generation_spans.nv_sum_long, 0)
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
        params.params,
        todo.input_hash
    from todo
    cross join params
    left join text_checks on todo.generation_id = text_checks.generation_id
    left join generation_spans
        on
            todo.generation_id = generation_spans.generation_id
            and todo.trace_id = generation_spans.trace_id
            and todo.is_traced
            and (params.blank_outputs_match or not coalesce(text_checks.is_blank, false))
    left join longest_long_span
        on
            todo.generation_id = longest_long_span.generation_id
            and todo.trace_id = longest_long_span.trace_id
            and todo.is_traced
            and (params.blank_outputs_match or not coalesce(text_checks.is_blank, false))
    left join span_counts on longest_long_span.span_id = span_counts.span_id

)

select * from final
