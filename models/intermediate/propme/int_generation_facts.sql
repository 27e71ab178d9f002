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
-- Memory: the span and document aggregates come from int_generation_span_facts, which computes them one lake
-- partition at a time (ingest/marts/partitioned.py); this model only combines a generation's partitions (normally
-- one) and joins one row per generation, so it holds no per-span table (BENCHMARKS.md "The generation facts one
-- lake partition at a time").
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

span_facts as (

    select * from {{ ref('int_generation_span_facts') }}
    {% if is_incremental() %}where generation_id in (select todo.generation_id from todo){% endif %}

),

span_counts as (

    select * from {{ ref('stg_span_counts') }}
    {% if is_incremental() %}where span_id in (select span_facts.longest_long_span_id from span_facts){% endif %}

),

text_checks as (

    select * from {{ ref('int_generation_text_checks') }}

),

generation_spans as (

    select
        generation_id,
        trace_id,
        cast(sum(n_spans) as bigint) as n_spans,
        max(longest_span) as longest_span,
        coalesce(max(longest_nonloop_span), 0) as longest_nonloop_span,
        cast(sum(n_loop_spans) as bigint) as n_loop_spans,
        cast(sum(n_long_spans) as bigint) as n_long_spans,
        cast(sum(n_long_nonloop_spans) as bigint) as n_long_nonloop_spans,
        sum(n_docs) as n_docs,
        sum(n_nv_docs) as n_nv_docs,
        sum(nv_sum) as nv_sum,
        sum(n_nv_docs_long) as n_nv_docs_long,
        sum(nv_sum_long) as nv_sum_long,
        bool_or(full_match_raw) as full_match_raw,
        bool_or(full_match_normalized) as full_match_normalized
    from span_facts
    group by generation_id, trace_id

),

longest_long_span as (

    select
        generation_id,
        trace_id,
        longest_long_span_id as span_id,
        longest_long_span_length as length
    from span_facts
    where longest_long_span_id is not null
    qualify row_number() over (
        partition by generation_id, trace_id
        order by longest_long_span_length desc, longest_long_span_start_tok asc, longest_long_span_id asc
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
