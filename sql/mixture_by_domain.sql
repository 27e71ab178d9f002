-- The estimated training mixture per domain next to the documented one (pacc: the paper's method; emq;
-- direct: no correction), with the bootstrap interval, and the verified attribution: the domains of the
-- training documents that the run's long spans were traced to (fct_span_domains; a run traced more than
-- once shows its latest pass; NULL: no long span was traced to that domain). All shares in percent.
-- Run: lmaudit sql @sql/mixture_by_domain.sql
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

trace_runs as (
    select * from stg_trace_runs
),

span_domains as (
    select fct_span_domains.*
    from fct_span_domains
    inner join trace_runs on fct_span_domains.trace_id = trace_runs.trace_id
    qualify trace_runs.started_at = max(trace_runs.started_at) over (partition by fct_span_domains.run_id)
),

final as (
    select
        estimates.run_id,
        estimates.domain,
        round(100 * max(documented.weight), 1) as documented,
        round(100 * max(case when estimates.estimator = 'direct' then estimates.estimate end), 1) as direct,
        round(100 * max(case when estimates.estimator = 'pacc' then estimates.estimate end), 1) as pacc,
        round(100 * max(case when estimates.estimator = 'emq' then estimates.estimate end), 1) as emq,
        printf(
            '[%.1f, %.1f]',
            100 * max(case when estimates.estimator = 'emq' then estimates.ci_low end),
            100 * max(case when estimates.estimator = 'emq' then estimates.ci_high end)
        ) as emq_ci_95,
        round(100 * max(span_domains.share), 1) as traced_spans
    from estimates
    inner join runs on estimates.run_id = runs.run_id
    left join documented
        on
            runs.model = documented.model
            and lower(estimates.domain) = lower(documented.domain)
    left join span_domains
        on
            estimates.run_id = span_domains.run_id
            and lower(estimates.domain) = lower(span_domains.domain)
    group by estimates.run_id, estimates.domain
    order by estimates.run_id asc, estimates.domain asc
)

select * from final
