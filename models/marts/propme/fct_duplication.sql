-- One row per (run, tracing pass): how often the longest non-loop span of >= long_span_tokens tokens of
-- each generation occurs in the corpus (its first 50 tokens, and the whole span), degenerate generations
-- left out. Buckets: once, rare (2 .. rare_max_count - 1), frequent (>= rare_max_count), unknown (no count).
with

params as (

    select * from {{ ref('int_propme_params') }}

),

run_traces as (

    select * from {{ ref('int_run_traces') }}

),

facts as (

    select * from {{ ref('int_generation_facts') }}

),

counted as (

    select
        run_id,
        trace_id,
        count(*) filter (where not is_degenerate) as n_generations,
        count(*) filter (where is_degenerate) as n_excluded,
        count(*) filter (where not is_degenerate and longest_long_span_id is not null) as n_long,
        count(*) filter (where not is_degenerate and long_spans_all_loops) as n_long_loops_only,
        count(*) filter (where not is_degenerate and duplication_bucket = 'once') as n_once,
        count(*) filter (where not is_degenerate and duplication_bucket = 'rare') as n_rare,
        count(*) filter (where not is_degenerate and duplication_bucket = 'frequent') as n_frequent,
        count(*) filter (where not is_degenerate and duplication_bucket = 'unknown') as n_unknown,
        median(longest_long_first50_count) filter (where not is_degenerate) as median_first50_count,
        count(*) filter (where not is_degenerate and longest_long_whole_count = 1) as n_whole_once,
        count(longest_long_whole_count) filter (where not is_degenerate) as n_whole_counted
    from facts
    group by run_id, trace_id

),

final as (

    select
        run_traces.run_id,
        run_traces.trace_id,
        run_traces.model,
        run_traces.corpus_id,
        run_traces.setting,
        run_traces.setting_kind,
        coalesce(counted.n_generations, 0) as n_generations,
        coalesce(counted.n_excluded, 0) as n_excluded,
        counted.n_long,
        counted.n_long_loops_only,
        counted.n_once,
        counted.n_rare,
        counted.n_frequent,
        counted.n_unknown,
        counted.n_once + counted.n_rare as n_below_rare_max,
        counted.median_first50_count,
        counted.n_once / nullif(counted.n_once + counted.n_rare + counted.n_frequent, 0) as share_once,
        (counted.n_once + counted.n_rare)
        / nullif(counted.n_once + counted.n_rare + counted.n_frequent, 0) as share_below_rare_max,
        counted.n_whole_once / nullif(counted.n_whole_counted, 0) as share_whole_once,
        counted.n_long / nullif(counted.n_generations, 0) as r50,
        case
            when run_traces.n_generations = 0 then 'empty run: no generations'
            when run_traces.trace_id is null then 'not traced: run lmaudit trace --run ' || run_traces.run_id
            when counted.n_generations = 0 then 'every generation is degenerate'
            when counted.n_long = 0 then 'no generation with a non-loop span of >= long_span_tokens tokens'
        end as null_reason,
        params.rare_max_count,
        params.long_span_tokens,
        params.params
    from run_traces
    cross join params
    left join counted
        on
            run_traces.run_id = counted.run_id
            and run_traces.trace_id is not distinct from counted.trace_id

)

select * from final
