-- Which models differ without a prompt: metric(run_a) - metric(run_b) for runs of the same prompt-free
-- setting, with an independent bootstrap interval (no prompts pair them), significant ones first.
-- Run: lmaudit sql @sql/prompt_free_differences.sql
with

diffs as (
    select * from fct_independent_run_differences
),

final as (
    select
        diffs.setting,
        diffs.model_a,
        diffs.model_b,
        diffs.metric,
        round(diffs.value_a, 4) as value_a,
        round(diffs.value_b, 4) as value_b,
        round(diffs.diff, 4) as diff,
        round(diffs.ci_low, 4) as ci_low,
        round(diffs.ci_high, 4) as ci_high,
        diffs.significant
    from diffs
    where diffs.metric in ('fmr', 'fmr50', 'als', 'nvr', 'r20', 'r50')
    order by
        diffs.significant desc nulls last, diffs.setting asc, diffs.metric asc, diffs.model_a asc, diffs.model_b asc
)

select * from final
