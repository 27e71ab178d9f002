-- The training mixture by membership-inference aggregation (LLMSurgeon's MIA baselines), one row per (model,
-- estimator, domain): the same number of reference documents from every domain (the smallest domain's count;
-- the first by md5 of their ids), a threshold at the median member score of that pooled sample, and each
-- domain's share of documents above the threshold, normalised to sum to 1.
with

scores as (

    select * from {{ ref('int_mixture_mia_scores') }}

),

domain_sizes as (

    select
        model,
        estimator,
        domain,
        count(*) as n_scored
    from scores
    group by model, estimator, domain

),

balance as (

    select
        model,
        estimator,
        min(n_scored) as n_per_domain,
        count(*) as n_domains
    from domain_sizes
    group by model, estimator

),

balanced as (

    select
        scores.*,
        balance.n_per_domain,
        balance.n_domains
    from scores
    inner join balance
        on
            scores.model = balance.model
            and scores.estimator = balance.estimator
    qualify row_number() over (
        partition by scores.model, scores.estimator, scores.domain
        order by md5(scores.ref_doc_id), scores.ref_doc_id
    ) <= balance.n_per_domain

),

thresholds as (

    select
        model,
        estimator,
        quantile_cont(member_score, 0.5) as threshold
    from balanced
    group by model, estimator

),

per_domain as (

    select
        balanced.model,
        balanced.estimator,
        balanced.domain,
        any_value(balanced.n_per_domain) as n_per_domain,
        any_value(balanced.n_domains) as n_domains,
        any_value(thresholds.threshold) as threshold,
        count(*) filter (where balanced.member_score > thresholds.threshold) / count(*) as share_above
    from balanced
    inner join thresholds
        on
            balanced.model = thresholds.model
            and balanced.estimator = thresholds.estimator
    group by balanced.model, balanced.estimator, balanced.domain

),

normalised as (

    select
        *,
        share_above / nullif(sum(share_above) over (partition by model, estimator), 0) as normalised_share,
        case
            when n_domains < 2 then 'reference documents of one domain only'
            when sum(share_above) over (partition by model, estimator) = 0
                then 'no reference document scores above the pooled median'
        end as null_reason
    from per_domain

),

final as (

    select
        model,
        {{ model_name('model') }} as model_name,
        estimator,
        domain,
        case when null_reason is null then normalised_share end as estimate,
        share_above,
        threshold,
        n_per_domain,
        n_domains,
        null_reason
    from normalised

)

select * from final
