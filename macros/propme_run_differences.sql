-- noqa: disable=LT02
{#
    The shared body of fct_run_differences (paired bootstrap on shared prompts) and
    fct_independent_run_differences (independent bootstrap of prompt-free runs): both join a pair of runs to
    each run's metric in fct_setting_metrics and to the difference bootstrap, and both blank the values of a
    row that carries a reason. The callers define the CTEs `pairs`, `setting_metrics` and `diffs`.

    propme_difference_joined(pair_columns, zero_denominator_reason): the `joined` CTE's select; pair_columns
    are the pair model's own columns carried through (shared-unit counts, corpora, ...).
    propme_difference_values('joined'): value_a, value_b, diff, ci_low, ci_high and significant (the interval
    excludes 0), NULL whenever null_reason is set.
#}
{% macro propme_difference_joined(pair_columns, zero_denominator_reason) -%}
    select
        pairs.run_a,
        pairs.run_b,
        pairs.trace_id,
        pairs.setting,
        pairs.model_a,
        pairs.model_b,
        {%- for column in pair_columns %}
        pairs.{{ column }},
        {%- endfor %}
        metrics_a.metric,
        diffs.value_a,
        diffs.value_b,
        diffs.diff,
        diffs.ci_low,
        diffs.ci_high,
        diffs.n_skipped_resamples,
        case
            when metrics_a.null_reason is not null then 'run_a: ' || metrics_a.null_reason
            when metrics_b.null_reason is not null then 'run_b: ' || metrics_b.null_reason
            when diffs.diff is null then '{{ zero_denominator_reason }}'
            when diffs.ci_low is null then 'every bootstrap round skipped'
        end as null_reason
    from pairs
    inner join setting_metrics as metrics_a
        on
            pairs.run_a = metrics_a.run_id
            and pairs.trace_id is not distinct from metrics_a.trace_id
    inner join setting_metrics as metrics_b
        on
            pairs.run_b = metrics_b.run_id
            and pairs.trace_id is not distinct from metrics_b.trace_id
            and metrics_a.metric = metrics_b.metric
    left join diffs
        on
            pairs.run_a = diffs.run_a
            and pairs.run_b = diffs.run_b
            and pairs.trace_id is not distinct from diffs.trace_id
            and metrics_a.metric = diffs.metric
{%- endmacro %}

{% macro propme_difference_values(joined='joined') -%}
    {%- for column in ['value_a', 'value_b', 'diff', 'ci_low', 'ci_high'] %}
        case when {{ joined }}.null_reason is null then {{ joined }}.{{ column }} end as {{ column }},
    {%- endfor %}
        case
            when {{ joined }}.null_reason is null then {{ joined }}.ci_low > 0 or {{ joined }}.ci_high < 0
        end as significant
{%- endmacro %}
