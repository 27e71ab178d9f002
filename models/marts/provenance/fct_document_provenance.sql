-- One row per training document that a generation reproduces (a span of at least var propme_mid_span_tokens
-- tokens, not a repetition loop, found in it; int_document_reproductions): where it came from (its metadata
-- fields, NULL when the corpus has none), its licence (the metadata's licence field normalised to SPDX, else the
-- licence detected in its whole text by `lmaudit provenance`), and which runs, models, settings and generations
-- reproduce it, with the longest span. is_read is false for a document `lmaudit provenance` has not read yet (its
-- licence is NULL). Incremental by document (macros/provenance_document_incremental.sql): a document's row is
-- recomputed when a (run, tracing pass) group that reproduces it is added, changed or removed, or when its
-- provenance row or corpus name changes; a build with nothing changed aggregates no document.
{{ config(
    materialized='incremental',
    incremental_strategy='append',
    on_schema_change='fail',
    pre_hook="{{ provenance_document_delete_stale() }}"
) }}

with

all_reproductions as (

    select * from {{ ref('int_document_reproductions') }}

),

groups as (

    {{ provenance_document_groups() }}

),

todo as (

    select distinct
        all_reproductions.corpus_key,
        all_reproductions.doc_ix
    from all_reproductions
    {% if is_incremental() -%}
        anti join {{ this }} as old
            on all_reproductions.corpus_key = old.corpus_key and all_reproductions.doc_ix = old.doc_ix
    {%- endif %}

),

reproductions as (

    select
        all_reproductions.*,
        groups.group_key
    from all_reproductions
    inner join todo on all_reproductions.corpus_key = todo.corpus_key and all_reproductions.doc_ix = todo.doc_ix
    inner join groups
        on
            all_reproductions.run_id = groups.run_id
            and all_reproductions.trace_id = groups.trace_id
            and all_reproductions.input_hash is not distinct from groups.input_hash

),

provenance as (

    select * from {{ ref('stg_document_provenance') }}

),

corpora as (

    select * from {{ ref('stg_corpora') }}

),

by_document as (

    select
        corpus_key,
        doc_ix,
        any_value(corpus_id) as corpus_id,
        any_value(shard) as shard,
        any_value(doc_id) as doc_id,
        any_value(domain) as domain,
        count(distinct run_id) as n_runs,
        list(distinct run_id order by run_id) as run_ids,
        list(distinct model order by model) as models,
        list(distinct setting order by setting) as settings,
        count(distinct generation_id) as n_generations,
        list(distinct generation_id order by generation_id)[1:100] as generation_ids,
        sum(n_spans) as n_spans,
        max(longest_span) as longest_span,
        first(run_id order by longest_span desc, generation_id asc) as longest_span_run_id,
        first(generation_id order by longest_span desc, generation_id asc) as longest_span_generation_id,
        first(longest_span_text order by longest_span desc, generation_id asc) as longest_span_text,
        max(max_nv_recall) as max_nv_recall,
        case
            when bool_or(best_match_tier = 'exact_full_raw') then 'exact_full_raw'
            when bool_or(best_match_tier = 'exact_full_normalized') then 'exact_full_normalized'
            else 'partial'
        end as best_match_tier,
        list(distinct group_key order by group_key) as group_keys
    from reproductions
    group by corpus_key, doc_ix

),

final as (

    select
        by_document.corpus_key,
        coalesce(provenance.corpus_id, by_document.corpus_id) as corpus_id,
        corpora.name as corpus_name,
        by_document.doc_ix,
        by_document.shard,
        coalesce(provenance.doc_id, by_document.doc_id) as doc_id,
        by_document.domain,
        provenance.source,
        provenance.path,
        provenance.url,
        provenance.repository,
        coalesce(provenance.licence_declared_spdx, provenance.licence_detected) as licence,
        case
            when provenance.licence_declared_spdx is not null then 'metadata'
            when provenance.licence_detected is not null then 'text'
        end as licence_origin,
        provenance.licence_declared,
        provenance.licence_declared_spdx,
        provenance.licence_detected,
        provenance.licence_evidence,
        provenance.licence_coverage,
        provenance.provenance_id is not null as is_read,
        by_document.n_runs,
        by_document.run_ids,
        by_document.models,
        by_document.settings,
        by_document.n_generations,
        by_document.generation_ids,
        by_document.n_spans,
        by_document.longest_span,
        by_document.longest_span_run_id,
        by_document.longest_span_generation_id,
        by_document.longest_span_text,
        by_document.max_nv_recall,
        by_document.best_match_tier,
        provenance.doc_tokens,
        provenance.metadata,
        by_document.group_keys,
        {{ provenance_document_hash('by_document.group_keys') }} as input_hash
    from by_document
    left join provenance on by_document.corpus_key = provenance.corpus_key and by_document.doc_ix = provenance.doc_ix
    left join corpora on coalesce(provenance.corpus_id, by_document.corpus_id) = corpora.corpus_id

)

select * from final
