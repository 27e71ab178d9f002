-- One row per (generation, tracing pass) with a long match: its longest span of >= mid_span_tokens tokens
-- and what it is (code, licence_boilerplate, documentation, prose, other), from the domain most of the
-- span's retrieved documents carry, else from the span's text (docs/propme-analyses.md).
-- Incremental by (run, tracing pass), as int_metric_units (macros/propme_run_incremental.sql): a fact row's hash
-- covers its generation's spans and documents (the tracing pass and the traced text fix them). Spans and
-- documents are read for the generations of the runs computed in this build only.
{{ config(
    materialized='incremental',
    incremental_strategy='append',
    on_schema_change='fail',
    pre_hook="{{ propme_delete_stale(['run_id', 'trace_id'], propme_run_fact_hashes()) }}"
) }}

with

params as (

    select * from {{ ref('int_propme_params') }}

),

todo as (

    {{ propme_runs_to_compute() }}

),

facts as (

    select
        facts.*,
        todo.input_hash as run_input_hash
    from {{ ref('int_generation_facts') }} as facts
    inner join todo on facts.run_id = todo.run_id and facts.trace_id is not distinct from todo.trace_id
    where facts.is_traced and not facts.is_degenerate

),

spans as (

    select spans.*
    from {{ ref('stg_spans') }} as spans
    {% if is_incremental() -%}
        where spans.generation_id in (select facts.generation_id from facts)
    {%- endif %}

),

loop_spans as (

    select * from {{ ref('int_span_loops') }}

),

longest as (

    select
        spans.span_id,
        spans.trace_id,
        spans.generation_id,
        spans.length,
        spans.is_full,
        spans.text
    from spans
    cross join params
    where spans.length >= params.mid_span_tokens
    qualify row_number() over (
        partition by spans.generation_id, spans.trace_id
        order by spans.is_full desc, spans.length desc, spans.start_tok asc, spans.span_id asc
    ) = 1

),

span_documents as (

    select span_documents.*
    from {{ ref('stg_span_documents') }} as span_documents
    where span_documents.span_id in (select longest.span_id from longest)

),

domain_votes as (

    select
        span_id,
        lower(domain) as domain,
        count(*) as n_docs
    from span_documents
    where domain is not null and domain <> ''
    group by span_id, lower(domain)

),

top_domain as (

    select
        span_id,
        domain
    from domain_votes
    qualify row_number() over (partition by span_id order by n_docs desc, domain asc) = 1

),

labelled as (

    select
        facts.run_id,
        facts.trace_id,
        facts.generation_id,
        facts.setting,
        longest.span_id,
        longest.length,
        longest.is_full,
        coalesce(loop_spans.is_loop, false) as is_loop,
        top_domain.domain,
        facts.is_code_like,
        longest.text,
        facts.run_input_hash,
        regexp_matches(
            lower(coalesce(longest.text, '')),
            'licen[cs]e|copyright|all rights reserved|permission is hereby granted|warranty|'
            || 'terms and conditions|redistribution|cookie|privacy policy|subscribe'
        ) as boilerplate_words
    from facts
    inner join longest
        on facts.generation_id = longest.generation_id and facts.trace_id = longest.trace_id
    left join loop_spans on longest.span_id = loop_spans.span_id
    left join top_domain on longest.span_id = top_domain.span_id
    where facts.is_traced and not facts.is_degenerate

),

final as (

    select
        run_id,
        trace_id,
        generation_id,
        setting,
        span_id,
        length,
        is_full,
        is_loop,
        domain,
        case
            when domain is not null then 'document_domain'
            else 'span_text'
        end as category_source,
        case
            when is_loop then 'other'
            when domain is not null and regexp_matches(domain, 'code|program|github|stack|header') then 'code'
            when
                domain is not null and regexp_matches(domain, 'licen|boilerplate|legal|template')
                then 'licence_boilerplate'
            when domain is not null and regexp_matches(domain, 'doc|manual|readme|tutorial') then 'documentation'
            when
                domain is not null
                and regexp_matches(domain, 'prose|news|wiki|book|web|fiction|academic|paper|encyclop|forum')
                then 'prose'
            when domain is not null then 'other'
            when boilerplate_words then 'licence_boilerplate'
            when is_code_like then 'code'
            else 'prose'
        end as category,
        text,
        run_input_hash as input_hash
    from labelled

)

select * from final
