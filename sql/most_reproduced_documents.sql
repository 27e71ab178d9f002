-- Which training documents are reproduced most often? Documents ranked by how many distinct
-- generations retrieved them through a span of >= 20 tokens, with their domain and best recall.
-- Run: lmaudit sql @sql/most_reproduced_documents.sql
with

spans as (
    select * from stg_spans
),

documents as (
    select * from stg_span_documents
),

final as (
    select
        documents.shard,
        documents.doc_ix,
        any_value(documents.doc_id) as doc_id,
        any_value(documents.domain) as domain,
        any_value(documents.source) as source,
        count(distinct spans.generation_id) as n_generations,
        max(spans.length) as longest_span,
        round(max(documents.nv_recall), 3) as best_nv_recall
    from documents
    inner join spans on documents.span_id = spans.span_id
    where spans.length >= 20
    group by documents.shard, documents.doc_ix
    order by n_generations desc, longest_span desc
    limit 50
)

select * from final
