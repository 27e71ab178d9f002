-- One row per (training document, generation, tracing pass): the generation reproduces the document when a
-- span of at least mid_span_tokens index tokens (var propme_mid_span_tokens) of it was found in the document.
-- Only a pass's current traces count: `traced_generations` must hold the generation with the hash of its
-- current text (a re-imported run's old spans reproduce nothing). A repetition loop (int_span_loops: a short
-- pattern repeated, e.g. a banner of '*') reproduces nothing either. Every run counts, whatever its purpose.
-- A document is (corpus_key, doc_ix): the pass's corpus, or its index folders when it traced --index ones.
-- Incremental by (run, tracing pass) (macros/provenance_incremental.sql): a group's rows are recomputed when its
-- current traces, its run's fields, its pass's corpus or the vars change; spans are read for these groups only.
{{ config(
    materialized='incremental',
    incremental_strategy='append',
    on_schema_change='fail',
    pre_hook="{{ propme_delete_stale(['run_id', 'trace_id'], provenance_reproduction_hashes()) }}"
) }}

with

todo as (

    {{ provenance_reproductions_to_compute() }}

),

params as (

    select * from {{ ref('int_propme_params') }}

),

spans as (

    select spans.*
    from {{ ref('stg_spans') }} as spans
    {% if is_incremental() -%}
        where
            spans.trace_id in (select todo.trace_id from todo)
            and spans.generation_id in (
                select run_generations.generation_id
                from {{ ref('stg_generations') }} as run_generations
                where run_generations.run_id in (select todo.run_id from todo)
            )
    {%- endif %}

),

span_documents as (

    select * from {{ ref('stg_span_documents') }}

),

trace_runs as (

    select * from {{ ref('stg_trace_runs') }}

),

traced as (

    select * from {{ ref('stg_traced_generations') }}

),

generations as (

    select * from {{ ref('stg_generations') }}

),

runs as (

    select * from {{ ref('stg_runs') }}

),

loop_spans as (

    select * from {{ ref('int_span_loops') }}

),

current_traces as (

    select
        traced.trace_id,
        traced.generation_id,
        generations.run_id,
        todo.input_hash as run_input_hash
    from traced
    inner join generations
        on traced.generation_id = generations.generation_id and traced.text_hash = md5(generations.text)
    inner join todo on generations.run_id = todo.run_id and traced.trace_id = todo.trace_id

),

pairs as (

    select
        coalesce(trace_runs.corpus_id, trace_runs.index_dir) as corpus_key,
        trace_runs.corpus_id,
        span_documents.doc_ix,
        span_documents.shard,
        span_documents.doc_id,
        span_documents.domain,
        current_traces.run_id,
        current_traces.run_input_hash,
        spans.generation_id,
        spans.trace_id,
        spans.span_id,
        spans.length,
        spans.start_tok,
        spans.text,
        span_documents.match_tier,
        span_documents.nv_recall
    from spans
    cross join params
    inner join span_documents on spans.span_id = span_documents.span_id
    inner join trace_runs on spans.trace_id = trace_runs.trace_id
    inner join current_traces
        on spans.trace_id = current_traces.trace_id and spans.generation_id = current_traces.generation_id
    left join loop_spans on spans.span_id = loop_spans.span_id
    where spans.length >= params.mid_span_tokens and not coalesce(loop_spans.is_loop, false)

),

final as (

    select
        pairs.corpus_key,
        pairs.doc_ix,
        any_value(pairs.corpus_id) as corpus_id,
        any_value(pairs.shard) as shard,
        any_value(pairs.doc_id) as doc_id,
        any_value(pairs.domain) as domain,
        pairs.run_id,
        runs.model,
        runs.setting,
        runs.purpose,
        pairs.generation_id,
        pairs.trace_id,
        count(*) as n_spans,
        max(pairs.length) as longest_span,
        first(pairs.span_id order by pairs.length desc, pairs.start_tok asc) as longest_span_id,
        first(pairs.text order by pairs.length desc, pairs.start_tok asc) as longest_span_text,
        max(pairs.nv_recall) as max_nv_recall,
        case
            when bool_or(pairs.match_tier = 'exact_full_raw') then 'exact_full_raw'
            when bool_or(pairs.match_tier = 'exact_full_normalized') then 'exact_full_normalized'
            else 'partial'
        end as best_match_tier,
        any_value(pairs.run_input_hash) as input_hash
    from pairs
    inner join runs on pairs.run_id = runs.run_id
    group by
        pairs.corpus_key,
        pairs.doc_ix,
        pairs.run_id,
        runs.model,
        runs.setting,
        runs.purpose,
        pairs.generation_id,
        pairs.trace_id

)

select * from final
