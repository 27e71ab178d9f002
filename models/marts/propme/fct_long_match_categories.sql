-- One row per (run, tracing pass, category of long match): how many non-degenerate generations' longest
-- span of >= mid_span_tokens tokens is code, licence/boilerplate, documentation, prose or other, with the
-- share of the run's long matches and the longest example.
with

params as (

    select * from {{ ref('int_propme_params') }}

),

run_traces as (

    select * from {{ ref('int_run_traces') }}

),

categories as (

    select * from {{ ref('int_long_match_categories') }}

),

counted as (

    select
        run_id,
        trace_id,
        category,
        count(*) as n_generations,
        count(*) filter (where is_full) as n_full_matches,
        count(*) filter (where is_loop) as n_loops,
        count(*) filter (where category_source = 'document_domain') as n_from_domain,
        median(length) as median_length,
        max(length) as max_length,
        arg_max(left(text, 200), length) as longest_example
    from categories
    group by run_id, trace_id, category

),

final as (

    select
        counted.run_id,
        counted.trace_id,
        run_traces.model,
        {{ model_name('run_traces.model') }} as model_name,
        run_traces.corpus_id,
        run_traces.setting,
        counted.category,
        counted.n_generations,
        counted.n_generations / sum(counted.n_generations) over (
            partition by counted.run_id, counted.trace_id
        ) as share_of_long_matches,
        counted.n_full_matches,
        counted.n_loops,
        counted.n_from_domain,
        counted.median_length,
        counted.max_length,
        counted.longest_example,
        params.mid_span_tokens,
        params.params
    from counted
    cross join params
    inner join run_traces
        on counted.run_id = run_traces.run_id and counted.trace_id = run_traces.trace_id

)

select * from final
