-- Which reproduced training documents carry a licence, and which runs reproduce them? One row per document that
-- a generation reproduces (a span of >= var propme_mid_span_tokens tokens) with a licence from its metadata or
-- found in its text by `lmaudit provenance` (SPDX identifiers, licence texts and headers), the runs and settings
-- that reproduce it and the longest span. Documents not read yet by `lmaudit provenance` are listed with licence
-- 'not read yet'.
-- Run: lmaudit provenance && lmaudit build && lmaudit sql @sql/license_reproductions.sql
with

documents as (

    select * from fct_document_provenance

),

final as (

    select
        coalesce(licence, case when not is_read then 'not read yet' end) as licence,
        licence_origin,
        doc_id,
        coalesce(path, source) as path_or_source,
        repository,
        n_runs,
        array_to_string(settings, ', ') as settings,
        n_generations,
        longest_span,
        longest_span_run_id,
        left(longest_span_text, 100) as longest_span_start
    from documents
    where licence is not null or not is_read
    order by longest_span desc, doc_id asc

)

select * from final
