-- One row per (document set, run, tracing pass, generation) with doc_ix NULL (the whole set), and one more per
-- document of the set that the generation reproduces a span from: the facts of int_generation_facts, counted
-- only over spans whose retrieved training documents include the set's (or that document): longest non-loop
-- span, full match (tier exact_full_raw / normalized). Column names follow int_generation_facts, so
-- int_document_set_units reads them through the same macro (macros/propme_metric_flags.sql). A blank output
-- never matches (var propme_blank_outputs_match), as in int_generation_facts. Documents are those the tracer
-- retrieved for a span (at most its max_docs per span): a span in very many documents names a sample of them.
with

params as (

    select * from {{ ref('int_propme_params') }}

),

set_runs as (

    select * from {{ ref('int_document_set_runs') }}

),

document_sets as (

    select * from {{ ref('stg_document_sets') }}

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

spans as (

    select * from {{ ref('stg_spans') }}

),

span_documents as (

    select * from {{ ref('stg_span_documents') }}

),

loop_spans as (

    select * from {{ ref('int_span_loops') }}

),

text_checks as (

    select * from {{ ref('int_generation_text_checks') }}

),

-- a prefix prompt names its document by the `id` metadata field, or doc:<n> when that is missing or falsy (an
-- empty string, the integer 0: ingest/prompts/settings.py), while doc_id keeps any id as text: both names match
document_names as (

    select
        document_set,
        doc_id as source_doc,
        doc_ix
    from document_sets
    where doc_id is not null
    union all
    select
        document_set,
        'doc:' || doc_ix as source_doc,
        doc_ix
    from document_sets

),

source_docs as (

    select
        document_set,
        source_doc,
        min(doc_ix) as doc_ix
    from document_names
    group by document_set, source_doc

),

set_generations as (

    select
        set_runs.document_set,
        set_runs.run_id,
        set_runs.trace_id,
        set_runs.unit_kind,
        generations.generation_id,
        case
            when set_runs.unit_kind = 'prompt' then coalesce(generations.prompt_id, generations.generation_id)
            else generations.generation_id
        end as unit_id,
        source_docs.doc_ix as source_doc_ix,
        traced.n_index_tokens as n_tokens,
        text_checks.is_blank,
        text_checks.is_degenerate,
        text_checks.is_code_like,
        text_checks.has_true_continuation,
        text_checks.targeted_hit
    from set_runs
    inner join generations on set_runs.run_id = generations.run_id
    inner join traced
        on
            set_runs.trace_id = traced.trace_id
            and generations.generation_id = traced.generation_id
            and md5(generations.text) = traced.text_hash
    left join text_checks on generations.generation_id = text_checks.generation_id
    left join prompts on generations.prompt_id = prompts.prompt_id
    left join source_docs
        on
            set_runs.document_set = source_docs.document_set
            and prompts.source_doc = source_docs.source_doc

),

set_spans as (

    select
        set_generations.document_set,
        set_generations.run_id,
        set_generations.trace_id,
        set_generations.generation_id,
        document_sets.doc_ix,
        spans.span_id,
        spans.length,
        coalesce(loop_spans.is_loop, false) as is_loop,
        span_documents.match_tier
    from set_generations
    cross join params
    inner join spans
        on
            set_generations.trace_id = spans.trace_id
            and set_generations.generation_id = spans.generation_id
    inner join span_documents on spans.span_id = span_documents.span_id
    inner join document_sets
        on
            set_generations.document_set = document_sets.document_set
            and span_documents.doc_ix = document_sets.doc_ix
            and span_documents.shard = document_sets.shard
    left join loop_spans on spans.span_id = loop_spans.span_id
    where params.blank_outputs_match or not coalesce(set_generations.is_blank, false)

),

span_facts as (

    select
        document_set,
        run_id,
        trace_id,
        generation_id,
        doc_ix,
        max(length) as longest_span,
        coalesce(max(length) filter (where not is_loop), 0) as longest_nonloop_span,
        bool_or(match_tier = 'exact_full_raw') as full_match_raw,
        bool_or(match_tier in ('exact_full_raw', 'exact_full_normalized')) as full_match_normalized
    from set_spans
    group by grouping sets (
        (document_set, run_id, trace_id, generation_id),
        (document_set, run_id, trace_id, generation_id, doc_ix)
    )

),

final as (

    select
        set_generations.document_set,
        set_generations.run_id,
        set_generations.trace_id,
        set_generations.generation_id,
        set_generations.unit_id,
        set_generations.unit_kind,
        span_facts.doc_ix,
        set_generations.source_doc_ix,
        set_generations.n_tokens,
        set_generations.is_blank,
        set_generations.is_degenerate,
        set_generations.is_code_like,
        set_generations.has_true_continuation,
        set_generations.targeted_hit,
        coalesce(span_facts.longest_span, 0) as longest_span,
        coalesce(span_facts.longest_nonloop_span, 0) as longest_nonloop_span,
        coalesce(span_facts.full_match_raw, false) as full_match_raw,
        coalesce(span_facts.full_match_normalized, false) as full_match_normalized,
        cast(null as varchar) as duplication_bucket,
        0.0 as nv_sum,
        0.0 as nv_sum_long,
        0 as n_nv_docs
    from set_generations
    left join span_facts
        on
            set_generations.document_set = span_facts.document_set
            and set_generations.run_id = span_facts.run_id
            and set_generations.trace_id = span_facts.trace_id
            and set_generations.generation_id = span_facts.generation_id

)

select * from final
