-- Longest spans of each run, with the training documents they were found in.
-- Shows the 50 longest kept or full spans across runs, one row per retrieved document.
-- Run: lmaudit sql @sql/longest_spans_with_sources.sql
with

spans as (
    select * from stg_spans
),

generations as (
    select * from stg_generations
),

documents as (
    select * from stg_span_documents
),

ranked as (
    select
        generations.run_id,
        spans.span_id,
        spans.generation_id,
        spans.length,
        spans.count as corpus_count,
        spans.text as span_text,
        row_number() over (partition by generations.run_id order by spans.length desc, spans.span_id asc) as rank_in_run
    from spans
    inner join generations on spans.generation_id = generations.generation_id
),

final as (
    select
        ranked.run_id,
        ranked.rank_in_run,
        ranked.length,
        ranked.corpus_count,
        documents.doc_id,
        documents.domain,
        documents.source,
        documents.match_tier,
        round(documents.nv_recall, 3) as nv_recall,
        left(ranked.span_text, 120) as span_start
    from ranked
    left join documents on ranked.span_id = documents.span_id
    where ranked.rank_in_run <= 10
    order by ranked.run_id, ranked.rank_in_run
)

select * from final
