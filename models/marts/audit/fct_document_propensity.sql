-- One row per (document set, document, propensity run, tracing pass, metric): for each training document of
-- a rightsholder's set, how many of the run's generations reproduce a span of >= 20 (r20) / >= 50 (r50) tokens
-- from it or match it in full (fmr): f_p, against the same share in the attack run (f_c), PM = f_p / (f_p +
-- f_c) with bootstrap intervals, and the targeted extraction of the attack prompts drawn from this document.
-- Every document of the set has its rows, reproduced or not.
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

final as (

    select
        pairs.document_set,
        document_sets.corpus_id,
        document_sets.doc_ix,
        document_sets.doc_id,
        document_sets.source,
        document_sets.domain,
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
    inner join bootstrap
        on
            pairs.document_set = bootstrap.document_set
            and pairs.propensity_run_id = bootstrap.propensity_run_id
            and pairs.trace_id = bootstrap.trace_id
            and bootstrap.doc_ix is not null
    inner join document_sets
        on
            bootstrap.document_set = document_sets.document_set
            and bootstrap.doc_ix = document_sets.doc_ix

)

select * from final
