-- Mixture estimates scored against documented mixtures: one row per (run, classifier, estimator,
-- documented model) where the run's model matches a documented model (exact name, the name after the last
-- '/', or var mixture_model_aliases; case-insensitive). Models are compared as the staging models read them
-- (macro model_key: a folder inside the warehouse by its path relative to it, old absolute rows included).
-- Tokenizer estimates (estimator bpe_merges) and the membership-inference baselines (mia_*) have no run or
-- classifier: their model is fct_mixture_estimates.model and they match the same way. The documented
-- weights are restricted to the estimate's domains (case-insensitive names) and renormalised; the weight
-- left out is uncovered_weight.
-- Metrics (ingest.mixture.metrics): overlap accuracy = 1 - 0.5 sum |a - p|, MAE = mean |a - p|, R^2 across
-- domains, RAE and KL with QuaPy smoothing s(x) = (x + eps) / (1 + K eps), eps = 1 / (2 n), n = the
-- generations (the reference documents for bpe_merges).
with

params as (

    select
        model_aliases,
        max_uncovered_weight
    from {{ ref('int_mixture_params') }}

),

-- aliases read like the models they name (macro model_key): one keyed by a sandbox model's absolute folder
-- (another place's, before the warehouse moved) still applies to its runs
model_aliases as (

    select
        {{ model_key('alias_key') }} as model,
        {{ model_key('alias_value') }} as documented_model
    from (
        select
            alias_key,
            json_extract_string(model_aliases, '$."' || alias_key || '"') as alias_value
        from (
            select
                model_aliases,
                unnest(json_keys(model_aliases)) as alias_key
            from params
        ) as listed
    ) as keyed

),

documented as (

    select
        model,
        domain,
        weight,
        source
    from {{ ref('int_mixtures_documented') }}

),

documented_totals as (

    select
        model,
        sum(weight) as total_weight,
        string_agg(distinct source, '; ' order by source) as source
    from documented
    group by model

),

runs as (

    select
        run_id,
        model
    from {{ ref('stg_runs') }}

),

estimates as (

    select
        fct.run_id,
        coalesce(runs.model, fct.model) as run_model,
        fct.classifier_id,
        fct.classifier_name,
        fct.estimator,
        fct.domain,
        fct.estimate,
        coalesce(fct.n_generations, fct.n_reference) as n_generations,
        fct.null_reason
    from {{ ref('fct_mixture_estimates') }} as fct
    left join runs on fct.run_id = runs.run_id

),

subjects as (

    select distinct
        run_id,
        run_model
    from estimates
    where run_model is not null

),

run_matches as (

    select distinct
        subjects.run_id,
        subjects.run_model,
        totals.model as documented_model,
        totals.total_weight,
        totals.source as documented_source
    from subjects
    left join model_aliases on subjects.run_model = model_aliases.model
    inner join documented_totals as totals
        on lower(totals.model) in (
            lower(subjects.run_model),
            lower(regexp_extract(subjects.run_model, '[^/]*$')),
            lower(model_aliases.documented_model)
        )

),

paired as (

    select
        estimates.run_id,
        run_matches.run_model,
        estimates.classifier_id,
        estimates.classifier_name,
        estimates.estimator,
        run_matches.documented_model,
        run_matches.documented_source,
        run_matches.total_weight,
        estimates.domain,
        estimates.estimate,
        estimates.n_generations,
        estimates.null_reason,
        coalesce(documented.weight, 0) as documented_weight
    from estimates
    inner join run_matches
        on
            estimates.run_id is not distinct from run_matches.run_id
            and estimates.run_model = run_matches.run_model
    left join documented
        on
            run_matches.documented_model = documented.model
            and lower(estimates.domain) = lower(documented.domain)

),

covered as (

    select
        *,
        sum(documented_weight) over group_window as covered_weight,
        count(*) over group_window as n_domains,
        1.0 / (2.0 * n_generations) as eps
    from paired
    window group_window as (partition by run_id, run_model, classifier_id, estimator, documented_model)

),

per_domain as (

    select
        *,
        case when covered_weight > 0 then documented_weight / covered_weight end as truth
    from covered

),

smoothed as (

    select
        *,
        abs(truth - estimate) as abs_error,
        (truth + eps) / (1 + n_domains * eps) as truth_smoothed,
        (estimate + eps) / (1 + n_domains * eps) as estimate_smoothed,
        avg(truth) over (
            partition by run_id, run_model, classifier_id, estimator, documented_model
        ) as mean_truth
    from per_domain

),

grouped as (

    select
        run_id,
        run_model,
        classifier_id,
        classifier_name,
        estimator,
        documented_model,
        documented_source,
        any_value(n_domains) as n_domains,
        any_value(n_generations) as n_generations,
        any_value(total_weight) as total_weight,
        any_value(covered_weight) as covered_weight,
        count(estimate) as n_estimates,
        any_value(null_reason) as estimate_null_reason,
        1 - 0.5 * sum(abs_error) as overlap_accuracy,
        avg(abs_error) as mae,
        sum(power(truth - estimate, 2)) as ss_residual,
        sum(power(truth - mean_truth, 2)) as ss_total,
        avg(abs(truth_smoothed - estimate_smoothed) / truth_smoothed) as rae,
        sum(truth_smoothed * ln(truth_smoothed / estimate_smoothed)) as kl,
        list(domain order by domain) as domains,
        list(truth order by domain) as truth,
        list(estimate order by domain) as estimates
    from smoothed
    group by all

),

reasoned as (

    select
        grouped.*,
        1 - grouped.covered_weight / grouped.total_weight as uncovered_weight,
        case
            when grouped.estimate_null_reason is not null then grouped.estimate_null_reason
            when grouped.n_estimates < grouped.n_domains then 'some domains have no estimate'
            when grouped.covered_weight <= 0
                then 'the documented mixture shares no domain with the classifier'
            when 1 - grouped.covered_weight / grouped.total_weight > params.max_uncovered_weight
                then
                    'the documented mixture puts '
                    || round(100 * (1 - grouped.covered_weight / grouped.total_weight), 2)
                    || '% of its weight on domains the classifier does not have'
                    || ' (var mixture_max_uncovered_weight)'
        end as null_reason
    from grouped
    cross join params

),

final as (

    select
        run_id,
        run_model,
        classifier_id,
        classifier_name,
        estimator,
        documented_model,
        documented_source,
        n_domains,
        n_generations,
        domains,
        truth,
        estimates,
        uncovered_weight,
        case when null_reason is null then overlap_accuracy end as overlap_accuracy,
        case when null_reason is null then mae end as mae,
        case when null_reason is null and ss_total > 0 then 1 - ss_residual / ss_total end as r2,
        case when null_reason is null then rae end as rae,
        case when null_reason is null then kl end as kl,
        null_reason
    from reasoned

)

select * from final
