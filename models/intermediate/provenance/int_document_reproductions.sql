-- One row per (training document, generation, tracing pass): the generation reproduces the document when a
-- span of at least mid_span_tokens index tokens (var propme_mid_span_tokens) of it was found in the document.
-- Only a pass's current traces count: `traced_generations` must hold the generation with the hash of its
-- current text (a re-imported run's old spans reproduce nothing). A repetition loop (int_span_loops: a short
-- pattern repeated, e.g. a banner of '*') reproduces nothing either. Every run counts, whatever its purpose.
-- A document is (corpus_key, doc_ix): the pass's corpus, or its index folders when it traced --index ones.
-- Incremental by (run, tracing pass) (macros/provenance_incremental.sql): a group's rows are recomputed when its
-- current traces, its run's fields, its pass's corpus or the vars change; only these groups' traces are joined.
-- Memory (BENCHMARKS.md "Whole-project build at 1x, 8x and 16x"): the documents (162M rows at 8x paper scale) are
-- streamed against a hash table of the long current spans only (~3 % of all spans), as narrow rows; the spans'
-- texts join after the aggregate (one row per document and generation), the generations' texts are hashed
-- before their join, and the longest span is an arg_max over one number, not an ordered aggregate (which
-- buffers every row of its group). No CTE over spans or documents is read twice (DuckDB would store it as a
-- temporary table). The query this replaced joined all spans, with their texts, to all their documents before
-- filtering, and ran out of memory at 8x under a 6GB budget; this one builds at 8x alone without spilling.
-- It runs after int_generation_facts (the edge below; it reads nothing of it): dbt's two threads ran the two
-- largest joins of the build side by side in one DuckDB budget, which spilled ~10 GB and took 563 s at 8x (147 s
-- alone), and at times failed with DuckDB's "Out of Memory Error: failed to pin block" (8x, 2026-12-04 17:42).
-- depends_on: {{ ref('int_generation_facts') }}
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

    select
        spans.span_id,
        spans.trace_id,
        spans.generation_id,
        spans.length,
        spans.start_tok
    from {{ ref('stg_spans') }} as spans
    where spans.length >= (select params.mid_span_tokens from params)

),

span_texts as (

    select
        span_texts.span_id,
        span_texts.text
    from {{ ref('stg_spans') }} as span_texts
    where span_texts.length >= (select params.mid_span_tokens from params)

),

span_documents as (

    select
        span_documents.span_id,
        span_documents.doc_ix,
        span_documents.shard,
        span_documents.doc_id,
        span_documents.domain,
        span_documents.match_tier,
        span_documents.nv_recall
    from {{ ref('stg_span_documents') }} as span_documents

),

trace_runs as (

    select * from {{ ref('stg_trace_runs') }}

),

traced as (

    select * from {{ ref('stg_traced_generations') }}

),

generations as (

    select
        generations.generation_id,
        generations.run_id,
        md5(generations.text) as text_md5
    from {{ ref('stg_generations') }} as generations

),

runs as (

    select * from {{ ref('stg_runs') }}

),

loop_spans as (

    select loop_spans.span_id
    from {{ ref('int_span_loops') }} as loop_spans
    where loop_spans.is_loop

),

current_traces as (

    select
        traced.trace_id,
        traced.generation_id,
        generations.run_id,
        todo.input_hash as run_input_hash
    from traced
    inner join generations
        on traced.generation_id = generations.generation_id and traced.text_hash = generations.text_md5
    inner join todo on generations.run_id = todo.run_id and traced.trace_id = todo.trace_id

),

-- the long, current, non-loop spans: the build side of the documents' join
reproducing_spans as (

    select
        spans.span_id,
        spans.trace_id,
        spans.generation_id,
        spans.length,
        spans.start_tok,
        current_traces.run_id,
        current_traces.run_input_hash
    from spans
    inner join current_traces
        on spans.trace_id = current_traces.trace_id and spans.generation_id = current_traces.generation_id
    left join loop_spans on spans.span_id = loop_spans.span_id
    where loop_spans.span_id is null

),

document_spans as (

    select
        reproducing_spans.trace_id,
        span_documents.doc_ix,
        reproducing_spans.generation_id,
        any_value(reproducing_spans.run_id) as run_id,
        any_value(span_documents.shard) as shard,
        any_value(span_documents.doc_id) as doc_id,
        any_value(span_documents.domain) as domain,
        count(*) as n_spans,
        max(reproducing_spans.length) as longest_span,
        -- the longest span, the earliest on a tie: one number orders (length desc, start_tok asc), since
        -- 0 <= start_tok < 2^31 (a NULL start_tok sorts last, as in an ascending order by)
        arg_max(
            reproducing_spans.span_id,
            cast(reproducing_spans.length as bigint) * 4294967296
            + (4294967295 - coalesce(reproducing_spans.start_tok, 4294967295))
        ) as longest_span_id,
        max(span_documents.nv_recall) as max_nv_recall,
        case
            when bool_or(span_documents.match_tier = 'exact_full_raw') then 'exact_full_raw'
            when bool_or(span_documents.match_tier = 'exact_full_normalized') then 'exact_full_normalized'
            else 'partial'
        end as best_match_tier,
        any_value(reproducing_spans.run_input_hash) as input_hash
    from span_documents
    inner join reproducing_spans on span_documents.span_id = reproducing_spans.span_id
    group by reproducing_spans.trace_id, span_documents.doc_ix, reproducing_spans.generation_id

),

final as (

    select
        coalesce(trace_runs.corpus_id, trace_runs.index_dir) as corpus_key,
        document_spans.doc_ix,
        trace_runs.corpus_id,
        document_spans.shard,
        document_spans.doc_id,
        document_spans.domain,
        document_spans.run_id,
        runs.model,
        runs.setting,
        runs.purpose,
        document_spans.generation_id,
        document_spans.trace_id,
        document_spans.n_spans,
        document_spans.longest_span,
        document_spans.longest_span_id,
        span_texts.text as longest_span_text,
        document_spans.max_nv_recall,
        document_spans.best_match_tier,
        document_spans.input_hash
    from document_spans
    inner join trace_runs on document_spans.trace_id = trace_runs.trace_id
    inner join runs on document_spans.run_id = runs.run_id
    left join span_texts on document_spans.longest_span_id = span_texts.span_id

)

select * from final
