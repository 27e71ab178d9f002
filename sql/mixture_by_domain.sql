-- The estimated training mixture per domain next to the documented one (pacc: the paper's method; emq;
-- direct: no correction), with the bootstrap interval. Run: lmaudit sql @sql/mixture_by_domain.sql
with

estimates as (
    select * from fct_mixture_estimates
    where estimator in ('direct', 'pacc', 'emq')
),

runs as (
    select * from stg_runs
),

documented as (
    select * from int_mixtures_documented
),

final as (
    select
        estimates.run_id,
        estimates.domain,
        round(100 * max(documented.weight), 1) as documented_pct,
        round(100 * max(case when estimates.estimator = 'direct' then estimates.estimate end), 1) as direct_pct,
        round(100 * max(case when estimates.estimator = 'pacc' then estimates.estimate end), 1) as pacc_pct,
        round(100 * max(case when estimates.estimator = 'emq' then estimates.estimate end), 1) as emq_pct,
        round(100 * max(case when estimates.estimator = 'emq' then estimates.ci_low end), 1) as emq_ci_low_pct,
        round(100 * max(case when estimates.estimator = 'emq' then estimates.ci_high end), 1) as emq_ci_high_pct
    from estimates
    inner join runs on estimates.run_id = runs.run_id
    left join documented
        on
            runs.model = documented.model
            and lower(estimates.domain) = lower(documented.domain)
    group by estimates.run_id, estimates.domain
    order by estimates.run_id asc, estimates.domain asc
)

select * from final
