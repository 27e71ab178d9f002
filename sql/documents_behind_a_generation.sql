-- Documents behind one generation: every span of the generation (longest first) and the training
-- documents retrieved for it. Replace the generation id below (or pick the first one with spans).
-- Run: lmaudit sql @sql/documents_behind_a_generation.sql
with

spans as (
    select * from stg_spans
),

documents as (
    select * from stg_span_documents
),

chosen as (
    select min(generation_id) as generation_id
    from spans
    where length >= 20
),

final as (
    select
        spans.generation_id,
        spans.start_tok,
        spans.end_tok,
        spans.length,
        spans.kept,
        spans.is_full,
        documents.doc_id,
        documents.domain,
        documents.match_tier,
        round(documents.nv_recall, 3) as nv_recall,
        left(spans.text, 80) as span_start
    from spans
    inner join chosen on spans.generation_id = chosen.generation_id
    left join documents on spans.span_id = documents.span_id
    order by spans.length desc, spans.start_tok asc
)

select * from final
