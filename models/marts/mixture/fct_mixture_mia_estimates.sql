-- The training mixture by membership-inference aggregation (LLMSurgeon's MIA baselines), one row per (model,
-- estimator, domain). Per model and estimator the rows of one scoring convention (var mixture_mia_scoring,
-- authors by default; an estimator a model has only under the other uses that one: the --methods
-- baselines exist under authors only). Two aggregations (var mixture_mia_aggregation):
-- authors (default), as the authors' run_{mink,minkpp,zlib}_threshold scripts: every scored reference
-- document, a threshold at the median score of all of them, a document is a member when its score is >= the
-- threshold (loss, zlib, ref; their zlib script) or > it (Min-K%, Min-K%++; their scripts), and each domain's
-- member count divided by all members; balanced (lmaudit's earlier choice): the same number of documents
-- from every domain (the smallest domain's count, the first by md5 of their ids), strict >, the same
-- normalisation (with equal counts per domain, each domain's share above the median normalised). DC-PDD,
-- ReCaLL, GradNorm, Joint-Logit and Neighbor use the `>=` rule (their scripts' `score <= median` on DC-PDD's own sign
-- and `>=` for ReCaLL and Neighbor; GradNorm and Joint-Logit have no script and follow the loss script).
-- mia_duci: DUCI as the authors' run_duci_categories.py ran it (exp_scripts/duci_*.sh: --mia_method loss,
-- --calibration_split 0.3, --threshold_method optimal), on the mia_loss scores, each domain on its own: a
-- calibration set of max(10, floor(0.3 n)) of its documents (the first by md5 of their ids, where the script
-- draws them with numpy's permutation), its lower half (sorted by score) pseudo non-members and the rest
-- pseudo members, the threshold maximising TPR - FPR over the calibration scores (>=; sklearn's roc_curve:
-- the highest such threshold, none when the maximum is 0), TPR raised to FPR + 0.01 when not above it, then
-- the domain's debiased proportion mean(clip((m_i - FPR) / (TPR - FPR), 0, 1)) with m_i = score > threshold;
-- a domain of fewer than 10 documents: threshold its median, TPR = FPR, so the raw share above it. The
-- estimate is a domain's debiased proportion over their sum (aggregation = duci).
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
        scores.estimator,
        params.mia_scoring,
        case
            when bool_or(scores.scoring = params.mia_scoring) then params.mia_scoring
            else min(scores.scoring)
        end as scoring
    from scores
    cross join params
    group by scores.model, scores.estimator, params.mia_scoring

),

chosen as (

    select scores.*
    from scores
    inner join model_scoring
        on
            scores.model = model_scoring.model
            and scores.estimator = model_scoring.estimator
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
            when sample.aggregation = 'authors' and sample.estimator not in ('mia_mink', 'mia_minkpp')
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

duci_scores as (

    select
        model,
        scoring,
        ref_doc_id,
        domain,
        member_score,
        count(*) over (partition by model, domain) as n_valid,
        row_number() over (partition by model, domain order by md5(ref_doc_id), ref_doc_id) as draw
    from chosen
    where estimator = 'mia_loss'

),

duci_calibration as (

    select
        model,
        domain,
        member_score,
        row_number() over (partition by model, domain order by member_score) as score_rank,
        count(*) over (partition by model, domain) as n_calib
    from duci_scores
    where n_valid >= 10 and draw <= greatest(10, floor(n_valid * 0.3))

),

duci_labelled as (

    select
        *,
        score_rank > n_calib // 2 as pseudo_member
    from duci_calibration

),

duci_candidates as (

    select distinct
        model,
        domain,
        member_score as threshold
    from duci_labelled

),

duci_roc as (

    select
        candidates.model,
        candidates.domain,
        candidates.threshold,
        count(*) filter (where duci_labelled.pseudo_member and duci_labelled.member_score >= candidates.threshold)
        / count(*) filter (where duci_labelled.pseudo_member) as tpr,
        count(*) filter (where not duci_labelled.pseudo_member and duci_labelled.member_score >= candidates.threshold)
        / count(*) filter (where not duci_labelled.pseudo_member) as fpr
    from duci_candidates as candidates
    inner join duci_labelled
        on
            candidates.model = duci_labelled.model
            and candidates.domain = duci_labelled.domain
    group by candidates.model, candidates.domain, candidates.threshold

),

duci_best as (

    select
        model,
        domain,
        case when tpr - fpr > 0 then threshold end as threshold,
        case when tpr - fpr > 0 then tpr else 0.0 end as tpr,
        case when tpr - fpr > 0 then fpr else 0.0 end as fpr
    from duci_roc
    qualify row_number() over (partition by model, domain order by tpr - fpr desc, threshold desc) = 1

),

duci_small as (

    select
        model,
        domain,
        quantile_cont(member_score, 0.5) as threshold
    from duci_scores
    where n_valid < 10
    group by model, domain

),

duci_rates as (

    select
        duci_scores.model,
        duci_scores.domain,
        duci_scores.member_score,
        duci_scores.n_valid,
        duci_scores.scoring,
        coalesce(duci_small.threshold, duci_best.threshold) as threshold,
        case when duci_small.model is not null then 0.5 else greatest(duci_best.tpr, duci_best.fpr + 0.01) end as tpr,
        case when duci_small.model is not null then 0.5 else duci_best.fpr end as fpr,
        coalesce(duci_scores.member_score > coalesce(duci_small.threshold, duci_best.threshold), false) as is_member
    from duci_scores
    left join duci_small
        on
            duci_scores.model = duci_small.model
            and duci_scores.domain = duci_small.domain
    left join duci_best
        on
            duci_scores.model = duci_best.model
            and duci_scores.domain = duci_best.domain

),

duci_per_domain as (

    select
        model,
        domain,
        any_value(scoring) as scoring,
        any_value(threshold) as threshold,
        count(*) as n_valid,
        case
            when abs(any_value(tpr) - any_value(fpr)) < 1e-6 then avg(is_member::int)
            else avg(least(greatest((is_member::int - fpr) / (tpr - fpr), 0.0), 1.0))
        end as debiased
    from duci_rates
    group by model, domain

),

duci_normalised as (

    select
        *,
        count(*) over (partition by model) as n_domains,
        sum(n_valid) over (partition by model) as n_total,
        debiased / nullif(sum(debiased) over (partition by model), 0) as share,
        case
            when count(*) over (partition by model) < 2 then 'reference documents of one domain only'
            when sum(debiased) over (partition by model) = 0 then 'no domain has a positive debiased proportion'
        end as null_reason
    from duci_per_domain

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
    union all
    select
        model,
        {{ model_name('model') }} as model_name,
        'mia_duci' as estimator,
        domain,
        case when null_reason is null then share end as estimate,
        debiased as share_above,
        threshold,
        n_valid as n_per_domain,
        n_domains,
        n_total,
        scoring,
        'duci' as aggregation,
        null_reason
    from duci_normalised

)

select * from final
