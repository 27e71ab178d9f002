-- The training mixture by membership-inference aggregation (LLMSurgeon's MIA baselines), one row per (model,
-- estimator, domain). Per model the rows of one scoring convention (var mixture_mia_scoring, authors by
-- default; a model scored only under the other uses that one). Two aggregations (var mixture_mia_aggregation):
-- authors (default), as the authors' run_{mink,minkpp,zlib}_threshold scripts: every scored reference
-- document, a threshold at the median score of all of them, a document is a member when its score is >= the
-- threshold (loss, zlib, ref; their zlib script) or > it (Min-K%, Min-K%++; their scripts), and each domain's
-- member count divided by all members; balanced (lmaudit's earlier choice): the same number of documents
-- from every domain (the smallest domain's count, the first by md5 of their ids), strict >, the same
-- normalisation (with equal counts per domain, each domain's share above the median normalised).
with

scores as (

    select * from {{ ref('int_mixture_mia_scores') }}

),

params as (

    select * from {{ ref('int_mixture_params') }}

),

model_scoring as (

    select
        scores.model,
        params.mia_scoring,
        case
            when bool_or(scores.scoring = params.mia_scoring) then params.mia_scoring
            else min(scores.scoring)
        end as scoring
    from scores
    cross join params
    group by scores.model, params.mia_scoring

),

chosen as (

    select scores.*
    from scores
    inner join model_scoring
        on
            scores.model = model_scoring.model
            and scores.scoring = model_scoring.scoring

),

domain_sizes as (

    select
        model,
        estimator,
        domain,
        count(*) as n_scored
    from chosen
    group by model, estimator, domain

),

balance as (

    select
        model,
        estimator,
        min(n_scored) as n_smallest,
        count(*) as n_domains
    from domain_sizes
    group by model, estimator

),

sample as (

    select
        chosen.*,
        balance.n_domains,
        params.mia_aggregation as aggregation
    from chosen
    inner join balance
        on
            chosen.model = balance.model
            and chosen.estimator = balance.estimator
    cross join params
    qualify params.mia_aggregation = 'authors' or row_number() over (
        partition by chosen.model, chosen.estimator, chosen.domain
        order by md5(chosen.ref_doc_id), chosen.ref_doc_id
    ) <= balance.n_smallest

),

thresholds as (

    select
        model,
        estimator,
        quantile_cont(member_score, 0.5) as threshold
    from sample
    group by model, estimator

),

members as (

    select
        sample.*,
        thresholds.threshold,
        case
            when sample.aggregation = 'authors' and sample.estimator in ('mia_loss', 'mia_zlib', 'mia_ref')
                then sample.member_score >= thresholds.threshold
            else sample.member_score > thresholds.threshold
        end as is_member
    from sample
    inner join thresholds
        on
            sample.model = thresholds.model
            and sample.estimator = thresholds.estimator

),

per_domain as (

    select
        model,
        estimator,
        domain,
        any_value(scoring) as scoring,
        any_value(aggregation) as aggregation,
        count(*) as n_used,
        any_value(n_domains) as n_domains,
        any_value(threshold) as threshold,
        count(*) filter (where is_member) as n_members
    from members
    group by model, estimator, domain

),

normalised as (

    select
        *,
        n_members / n_used as share_above,
        sum(n_used) over (partition by model, estimator) as n_total,
        n_members / nullif(sum(n_members) over (partition by model, estimator), 0) as member_share,
        case
            when n_domains < 2 then 'reference documents of one domain only'
            when sum(n_members) over (partition by model, estimator) = 0
                then 'no reference document scores above the median'
        end as null_reason
    from per_domain

),

final as (

    select
        model,
        {{ model_name('model') }} as model_name,
        estimator,
        domain,
        case when null_reason is null then member_share end as estimate,
        share_above,
        threshold,
        n_used as n_per_domain,
        n_domains,
        n_total,
        scoring,
        aggregation,
        null_reason
    from normalised

)

select * from final
