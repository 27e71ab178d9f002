-- One row per (document set, propensity run, tracing pass, metric): for a rightsholder's set of training
-- documents, how many of the run's generations reproduce a span of >= 20 (r20) / >= 50 (r50) tokens from any
-- of them or match one in full (fmr): f_p, against the same share in the attack run (f_c: the set's own
-- prefix attack when built, else the corpus-wide prefix run), PM = f_p / (f_p + f_c) with bootstrap
-- intervals, and the attack's targeted extraction. NULLs carry a reason.
with

pairs as (

    select * from {{ ref('int_document_set_pairs') }}

),

pairs_ok as (

    select
        document_set,
        propensity_run_id,
        trace_id,
        not coalesce(propensity_partly_traced, false) as p_ok,
        not coalesce(attack_partly_traced, false) as c_ok
    from pairs

),

bootstrap as (

    select * from {{ ref('int_document_set_bootstrap') }}

),

document_sets as (

    select * from {{ ref('stg_document_sets') }}

),

sets as (

    select
        document_set,
        any_value(corpus_id) as corpus_id,
        any_value(selection) as selection,
        count(*) as n_documents
    from document_sets
    group by document_set

),

reproduced as (

    select
        document_set,
        propensity_run_id,
        trace_id,
        metric,
        count(*) filter (where hits_p > 0) as n_documents_reproduced
    from bootstrap
    where doc_ix is not null
    group by document_set, propensity_run_id, trace_id, metric

),

final as (

    select
        pairs.document_set,
        sets.corpus_id,
        sets.selection,
        sets.n_documents,
        pairs.propensity_run_id,
        pairs.trace_id,
        pairs.model,
        pairs.propensity_setting,
        pairs.attack_run_id,
        pairs.attack_kind,
        bootstrap.metric,
        cast(bootstrap.hits_p as bigint) as hits_p,
        cast(bootstrap.n_generations_p as bigint) as n_generations_p,
        case when pairs_ok.p_ok then bootstrap.f_p end as f_p,
        case when pairs_ok.p_ok then bootstrap.f_p_ci_low end as f_p_ci_low,
        case when pairs_ok.p_ok then bootstrap.f_p_ci_high end as f_p_ci_high,
        cast(bootstrap.hits_c as bigint) as hits_c,
        cast(bootstrap.n_generations_c as bigint) as n_generations_c,
        case when pairs_ok.c_ok then bootstrap.f_c end as f_c,
        case when pairs_ok.c_ok then bootstrap.f_c_ci_low end as f_c_ci_low,
        case when pairs_ok.c_ok then bootstrap.f_c_ci_high end as f_c_ci_high,
        case when pairs_ok.p_ok and pairs_ok.c_ok then bootstrap.pm end as pm,
        case when pairs_ok.p_ok and pairs_ok.c_ok then bootstrap.pm_ci_low end as pm_ci_low,
        case when pairs_ok.p_ok and pairs_ok.c_ok then bootstrap.pm_ci_high end as pm_ci_high,
        case when pairs_ok.p_ok and pairs_ok.c_ok then bootstrap.n_skipped_rounds end as n_skipped_rounds,
        case
            when pairs_ok.p_ok and pairs_ok.c_ok then bootstrap.pm_ci_low > 0.5 or bootstrap.pm_ci_high < 0.5
        end as pm_differs_from_neutral,
        coalesce(reproduced.n_documents_reproduced, 0) as n_documents_reproduced,
        cast(bootstrap.te_generations as bigint) as te_generations,
        cast(bootstrap.te_hits as bigint) as te_hits,
        case when pairs_ok.c_ok then bootstrap.te end as te,
        case when pairs_ok.c_ok then bootstrap.te_ci_low end as te_ci_low,
        case when pairs_ok.c_ok then bootstrap.te_ci_high end as te_ci_high,
        bootstrap.n_resamples,
        bootstrap.seed as bootstrap_seed,
        bootstrap.ci_level,
        case
            when pairs.null_reason is not null then pairs.null_reason
            when bootstrap.f_p is null then 'f_p: no non-degenerate generation'
            when bootstrap.f_c is null then 'f_c: no non-degenerate generation in the attack run'
            when bootstrap.pm_ci_low is null then 'every bootstrap round skipped: f_p + f_c = 0 in all rounds'
        end as null_reason
    from pairs
    inner join pairs_ok
        on
            pairs.document_set = pairs_ok.document_set
            and pairs.propensity_run_id = pairs_ok.propensity_run_id
            and pairs.trace_id = pairs_ok.trace_id
    inner join sets on pairs.document_set = sets.document_set
    inner join bootstrap
        on
            pairs.document_set = bootstrap.document_set
            and pairs.propensity_run_id = bootstrap.propensity_run_id
            and pairs.trace_id = bootstrap.trace_id
            and bootstrap.doc_ix is null
    left join reproduced
        on
            bootstrap.document_set = reproduced.document_set
            and bootstrap.propensity_run_id = reproduced.propensity_run_id
            and bootstrap.trace_id = reproduced.trace_id
            and bootstrap.metric = reproduced.metric

)

select * from final
