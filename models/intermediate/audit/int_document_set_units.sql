-- One row per (document set, run, tracing pass, resampling unit, document), doc_ix NULL for the whole set: the
-- unit's counts behind the set's (and each document's) r20, r50, fmr and targeted extraction. Which generation
-- counts (not degenerate) and what a hit is (r_mid, r_long, fm_raw, te_hit) come from the per-run metrics' own
-- macro (macros/propme_metric_flags.sql), so a change there reaches these numbers too. A document's r20 / r50 /
-- fmr share the unit's n_ok as denominator (ingest/audit/marts.py); targeted extraction counts only the attack
-- generations whose prefix was drawn from the set (from the document): the corpus-wide attack draws most of its
-- prefixes elsewhere. Document rows exist only where a count is > 0.
with

params as (

    select * from {{ ref('int_propme_params') }}

),

facts as (

    select * from {{ ref('int_document_set_generation_facts') }}

),

flags as (

    select
        facts.document_set,
        facts.run_id,
        facts.trace_id,
        facts.unit_id,
        facts.doc_ix,
        facts.source_doc_ix,
        {{ propme_metric_flags('facts', 'params') }}
    from facts
    cross join params

),

whole_set as (

    select
        document_set,
        run_id,
        trace_id,
        unit_id,
        count(*) as n_generations,
        count(*) filter (where not_degenerate) as n_ok,
        count(*) filter (where not_degenerate and r_mid) as r20_hits,
        count(*) filter (where not_degenerate and r_long) as r50_hits,
        count(*) filter (where not_degenerate and fm_raw) as fmr_hits,
        count(*) filter (where not_degenerate and has_true_continuation and source_doc_ix is not null) as n_te,
        count(*) filter (
            where not_degenerate and has_true_continuation and te_hit and source_doc_ix is not null
        ) as te_hits
    from flags
    where doc_ix is null
    group by document_set, run_id, trace_id, unit_id

),

document_hits as (

    select
        document_set,
        run_id,
        trace_id,
        unit_id,
        doc_ix,
        count(*) filter (where not_degenerate and r_mid) as r20_hits,
        count(*) filter (where not_degenerate and r_long) as r50_hits,
        count(*) filter (where not_degenerate and fm_raw) as fmr_hits
    from flags
    where doc_ix is not null
    group by document_set, run_id, trace_id, unit_id, doc_ix

),

document_attacks as (

    select
        document_set,
        run_id,
        trace_id,
        unit_id,
        source_doc_ix as doc_ix,
        count(*) filter (where not_degenerate and has_true_continuation) as n_te,
        count(*) filter (where not_degenerate and has_true_continuation and te_hit) as te_hits
    from flags
    where doc_ix is null and source_doc_ix is not null
    group by document_set, run_id, trace_id, unit_id, source_doc_ix

),

documents as (

    select
        coalesce(document_hits.document_set, document_attacks.document_set) as document_set,
        coalesce(document_hits.run_id, document_attacks.run_id) as run_id,
        coalesce(document_hits.trace_id, document_attacks.trace_id) as trace_id,
        coalesce(document_hits.unit_id, document_attacks.unit_id) as unit_id,
        coalesce(document_hits.doc_ix, document_attacks.doc_ix) as doc_ix,
        cast(null as bigint) as n_generations,
        cast(null as bigint) as n_ok,
        coalesce(document_hits.r20_hits, 0) as r20_hits,
        coalesce(document_hits.r50_hits, 0) as r50_hits,
        coalesce(document_hits.fmr_hits, 0) as fmr_hits,
        coalesce(document_attacks.n_te, 0) as n_te,
        coalesce(document_attacks.te_hits, 0) as te_hits
    from document_hits
    full outer join document_attacks
        on
            document_hits.document_set = document_attacks.document_set
            and document_hits.run_id = document_attacks.run_id
            and document_hits.trace_id = document_attacks.trace_id
            and document_hits.unit_id = document_attacks.unit_id
            and document_hits.doc_ix = document_attacks.doc_ix

),

final as (

    select
        document_set,
        run_id,
        trace_id,
        unit_id,
        cast(null as bigint) as doc_ix,
        n_generations,
        n_ok,
        r20_hits,
        r50_hits,
        fmr_hits,
        n_te,
        te_hits
    from whole_set
    union all
    select
        document_set,
        run_id,
        trace_id,
        unit_id,
        doc_ix,
        n_generations,
        n_ok,
        r20_hits,
        r50_hits,
        fmr_hits,
        n_te,
        te_hits
    from documents
    where r20_hits + r50_hits + fmr_hits + n_te > 0

)

select * from final
