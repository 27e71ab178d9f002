-- How much training text does each run reproduce? Per run: generations, mean longest span (tokens),
-- share of generations with a span of >= 20 and >= 50 tokens, and share with a verbatim full match.
-- Run: lmaudit sql @sql/run_overview.sql
with

generations as (
    select * from stg_generations
),

runs as (
    select * from stg_runs
),

spans as (
    select * from stg_spans
),

documents as (
    select * from stg_span_documents
),

longest as (
    select
        generation_id,
        max(length) as longest_span
    from spans
    group by generation_id
),

full_matches as (
    select distinct spans.generation_id
    from documents
    inner join spans on documents.span_id = spans.span_id
    where documents.match_tier = 'exact_full_raw'
),

final as (
    select
        runs.run_id,
        runs.setting,
        count(*) as n_generations,
        round(avg(coalesce(longest.longest_span, 0)), 2) as mean_longest_span,
        round(avg(case when longest.longest_span >= 20 then 1.0 else 0.0 end), 3) as share_span_20,
        round(avg(case when longest.longest_span >= 50 then 1.0 else 0.0 end), 3) as share_span_50,
        round(avg(case when full_matches.generation_id is not null then 1.0 else 0.0 end), 3) as share_full_match
    from generations
    inner join runs on generations.run_id = runs.run_id
    left join longest on generations.generation_id = longest.generation_id
    left join full_matches on generations.generation_id = full_matches.generation_id
    group by runs.run_id, runs.setting
    order by runs.run_id
)

select * from final
