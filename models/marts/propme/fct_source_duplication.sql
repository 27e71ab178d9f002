-- One row per (run with true continuations, tracing pass, duplication bucket of the source sequence): the
-- targeted-extraction rate of the prompts whose source sequence (prompt + true continuation) occurs once,
-- 2-9, 10-99 or 100+ times in the corpus, with its interval and the number of prompts.
with

params as (

    select * from {{ ref('int_propme_params') }}

),

run_traces as (

    select * from {{ ref('int_run_traces') }}

),

units as (

    select * from {{ ref('int_source_duplication_units') }}

),

bootstrap as (

    select * from {{ ref('int_source_duplication_bootstrap') }}

),

counts as (

    select
        run_id,
        trace_id,
        bucket,
        count(*) as n_prompts,
        sum(n_generations) as n_generations,
        sum(num) as n_hits,
        sum(den) as n_eligible,
        median(source_count) as median_source_count
    from units
    group by run_id, trace_id, bucket

),

final as (

    select
        counts.run_id,
        counts.trace_id,
        run_traces.model,
        {{ model_name('run_traces.model') }} as model_name,
        run_traces.corpus_id,
        run_traces.setting,
        counts.bucket,
        case counts.bucket
            when 'once' then 1
            when '2-9' then 2
            when '10-99' then 3
            when '100+' then 4
            when 'not_found_whole' then 5
            else 6
        end as bucket_order,
        counts.n_prompts,
        counts.n_generations,
        cast(counts.n_eligible as bigint) as n_eligible,
        cast(counts.n_hits as bigint) as n_hits,
        counts.median_source_count,
        case when counts.n_eligible > 0 then bootstrap.value end as te,
        case
            when counts.n_eligible = 0 then null
            when counts.n_hits = 0 then 0.0
            else bootstrap.ci_low
        end as ci_low,
        case
            when counts.n_eligible = 0 then null
            when counts.n_hits = 0 then 0.0
            else bootstrap.ci_high
        end as ci_high,
        case when counts.n_eligible > 0 then 'percentile_bootstrap' end as ci_method,
        {{ propme_rule_of_three_upper('counts.n_eligible > 0 and counts.n_hits = 0', 'counts.n_prompts') }}
            as upper_rule_of_three,
        case
            when counts.bucket = 'not_traced'
                then 'source sequences not traced by this pass: run lmaudit trace --prompts ' || run_traces.setting
            when counts.n_eligible = 0 then 'every sample is degenerate'
        end as null_reason,
        params.bootstrap_resamples as n_resamples,
        params.bootstrap_seed,
        params.ci_level,
        params.params
    from counts
    cross join params
    inner join run_traces
        on counts.run_id = run_traces.run_id and counts.trace_id = run_traces.trace_id
    left join bootstrap
        on
            counts.run_id = bootstrap.run_id
            and counts.trace_id = bootstrap.trace_id
            and 'te@' || counts.bucket = bootstrap.metric

)

select * from final
