-- Every signal about a model's training mixture side by side, one row per (model, domain): the documented
-- share, the tokenizer's estimate (bpe_merges: the merge list), the generation-based estimate (var
-- mixture_sources_estimator of the model's latest scored run) and the verified attribution (the share of
-- long reproduced spans traced to training documents of the domain, latest tracing pass of that run).
with

estimates as (

    select
        run_id,
        model,
        classifier_id,
        estimator,
        domain,
        estimate,
        ci_low,
        ci_high
    from {{ ref('fct_mixture_estimates') }}

),

runs as (

    select
        run_id,
        model,
        coalesce(finished_at, started_at) as run_at
    from {{ ref('stg_runs') }}

),

documented as (

    select
        model,
        domain,
        share
    from {{ ref('int_mixtures_documented') }}

),

span_domains as (

    select
        run_id,
        trace_id,
        domain,
        share
    from {{ ref('fct_span_domains') }}

),

trace_runs as (

    select
        trace_id,
        started_at
    from {{ ref('stg_trace_runs') }}

),

tokenizer as (

    select
        model,
        domain,
        estimate,
        ci_low,
        ci_high
    from estimates
    where estimator = 'bpe_merges'

),

latest_run as (

    select
        estimates.model,
        estimates.run_id,
        estimates.classifier_id
    from estimates
    inner join runs on estimates.run_id = runs.run_id
    where estimates.estimator = '{{ var("mixture_sources_estimator", "pacc") }}'
    qualify row_number() over (
        partition by estimates.model
        order by runs.run_at desc nulls last, estimates.run_id desc, estimates.classifier_id desc
    ) = 1

),

generation as (

    select
        estimates.model,
        estimates.run_id,
        estimates.domain,
        estimates.estimate,
        estimates.ci_low,
        estimates.ci_high
    from estimates
    inner join latest_run
        on
            estimates.run_id = latest_run.run_id
            and estimates.classifier_id = latest_run.classifier_id
    where estimates.estimator = '{{ var("mixture_sources_estimator", "pacc") }}'

),

traced as (

    select
        span_domains.run_id,
        span_domains.domain,
        span_domains.share
    from span_domains
    inner join trace_runs on span_domains.trace_id = trace_runs.trace_id
    qualify trace_runs.started_at = max(trace_runs.started_at) over (partition by span_domains.run_id)

),

keys as (

    select
        model,
        domain
    from tokenizer
    union
    select
        model,
        domain
    from generation

),

final as (

    select
        keys.model,
        keys.domain,
        documented.share as documented,
        tokenizer.estimate as tokenizer_estimate,
        tokenizer.ci_low as tokenizer_ci_low,
        tokenizer.ci_high as tokenizer_ci_high,
        generation.run_id as generation_run_id,
        generation.estimate as generation_estimate,
        generation.ci_low as generation_ci_low,
        generation.ci_high as generation_ci_high,
        traced.share as traced_spans,
        abs(tokenizer.estimate - documented.share) as tokenizer_abs_error,
        abs(generation.estimate - documented.share) as generation_abs_error
    from keys
    left join documented
        on
            lower(keys.model) = lower(documented.model)
            and lower(keys.domain) = lower(documented.domain)
    left join tokenizer on keys.model = tokenizer.model and keys.domain = tokenizer.domain
    left join generation on keys.model = generation.model and keys.domain = generation.domain
    left join traced
        on
            generation.run_id = traced.run_id
            and lower(keys.domain) = lower(traced.domain)

)

select * from final
