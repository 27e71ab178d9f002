-- Which generations reproduce a software license? Generations with a span of >= 20 tokens found in a
-- training document whose text or metadata looks like a license, with the license source.
-- Run: lmaudit sql @sql/license_reproductions.sql
with

spans as (
    select * from stg_spans
),

documents as (
    select * from stg_span_documents
),

generations as (
    select * from stg_generations
),

license_hits as (
    select
        spans.generation_id,
        max(spans.length) as longest_span,
        any_value(documents.source) as license_source,
        any_value(documents.doc_id) as doc_id
    from spans
    inner join documents on spans.span_id = documents.span_id
    where
        spans.length >= 20
        and (
            documents.domain = 'boilerplate'
            or lower(coalesce(documents.source, '')) like '%licen%'
            or lower(documents.window_text) like '%permission is hereby granted%'
            or lower(documents.window_text) like '%licensed under%'
        )
    group by spans.generation_id
),

final as (
    select
        generations.run_id,
        license_hits.generation_id,
        license_hits.longest_span,
        license_hits.license_source,
        license_hits.doc_id,
        left(generations.text, 100) as generation_start
    from license_hits
    inner join generations on license_hits.generation_id = generations.generation_id
    order by license_hits.longest_span desc
)

select * from final
