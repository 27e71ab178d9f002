-- Verified attribution: the domains of the training documents retrieved for long spans (docs/mixture-method.md
-- section 8), one row per (run, tracing pass, domain). A span of at least var mixture_span_min_tokens
-- tokens with retrieved documents that carry a domain contributes weight 1, split over its documents'
-- domains in proportion to their counts; share = a domain's weight / the weight of all such spans of the run.
-- Shown next to fct_mixture_estimates (same run, same domain names when the corpus uses them).
with

params as (

    select span_min_tokens
    from {{ ref('int_mixture_params') }}

),

long_spans as (

    select
        spans.span_id,
        spans.trace_id,
        generations.run_id
    from {{ ref('stg_spans') }} as spans
    inner join {{ ref('stg_generations') }} as generations on spans.generation_id = generations.generation_id
    cross join params
    where spans.length >= params.span_min_tokens

),

span_docs as (

    select
        long_spans.run_id,
        long_spans.trace_id,
        long_spans.span_id,
        docs.domain,
        count(*) as n_documents
    from long_spans
    inner join {{ ref('stg_span_documents') }} as docs on long_spans.span_id = docs.span_id
    where docs.domain is not null
    group by long_spans.run_id, long_spans.trace_id, long_spans.span_id, docs.domain

),

span_weights as (

    select
        *,
        n_documents / sum(n_documents) over (partition by span_id) as span_weight
    from span_docs

),

run_totals as (

    select
        run_id,
        trace_id,
        count(*) as n_long_spans
    from long_spans
    group by run_id, trace_id

),

per_domain as (

    select
        run_id,
        trace_id,
        domain,
        count(distinct span_id) as n_spans,
        sum(n_documents) as n_documents,
        sum(span_weight) as span_weight
    from span_weights
    group by run_id, trace_id, domain

),

final as (

    select
        per_domain.run_id,
        per_domain.trace_id,
        per_domain.domain,
        per_domain.n_spans,
        per_domain.n_documents,
        per_domain.span_weight,
        per_domain.span_weight / sum(per_domain.span_weight) over (
            partition by per_domain.run_id, per_domain.trace_id
        ) as share,
        run_totals.n_long_spans,
        params.span_min_tokens
    from per_domain
    inner join run_totals on per_domain.run_id = run_totals.run_id and per_domain.trace_id = run_totals.trace_id
    cross join params

)

select * from final
