-- One row per (run, tracing pass, metric): every PropMe metric (docs/propme-method.md section 4) with its 95%
-- percentile bootstrap interval ([0, 0] for a proportion with zero events, upper_rule_of_three beside it), the
-- unit counts, the research parameters used, and `null_reason` when the value cannot be computed.
with

params as (

    select * from {{ ref('int_propme_params') }}

),

run_traces as (

    select * from {{ ref('int_run_traces') }}

),

definitions as (

    select * from {{ ref('int_metric_definitions') }}

),

bootstrap as (

    select * from {{ ref('int_setting_bootstrap') }}

),

grid as (

    select
        run_traces.run_id,
        run_traces.trace_id,
        run_traces.model,
        {{ model_name('run_traces.model') }} as model_name,
        run_traces.revision,
        run_traces.corpus_id,
        run_traces.setting,
        run_traces.setting_kind,
        run_traces.unit_kind,
        run_traces.trace_mode,
        run_traces.trace_corpus_id,
        run_traces.n_generations as n_run_generations,
        run_traces.n_traced_generations,
        run_traces.n_stale_generations,
        definitions.metric,
        definitions.base_metric,
        definitions.variant,
        definitions.metric_kind,
        definitions.unit,
        definitions.needs_trace,
        definitions.needs_prompts,
        definitions.empty_denominator_reason
    from run_traces
    cross join definitions

),

joined as (

    select
        grid.*,
        bootstrap.n_units,
        bootstrap.n_units_resampled,
        bootstrap.n_generations,
        bootstrap.n_excluded,
        bootstrap.numerator,
        bootstrap.denominator,
        bootstrap.value as bootstrap_value,
        bootstrap.ci_low as bootstrap_ci_low,
        bootstrap.ci_high as bootstrap_ci_high,
        bootstrap.n_skipped_resamples,
        case
            when grid.n_run_generations = 0 then 'empty run: no generations'
            when grid.needs_trace and grid.trace_id is null and grid.n_stale_generations > 0
                then 'not traced: its texts changed since they were traced; re-run lmaudit trace --run ' || grid.run_id
            when grid.needs_trace and grid.trace_id is null
                then 'not traced: run lmaudit trace --run ' || grid.run_id
            when grid.needs_trace and grid.n_traced_generations < grid.n_run_generations
                then
                    'partly traced: ' || grid.n_traced_generations || ' of ' || grid.n_run_generations
                    || ' generations traced from their current text; re-run lmaudit trace --run ' || grid.run_id
            when grid.needs_prompts and grid.unit_kind = 'generation'
                then 'prompt-free setting: the units are generations, not prompts with samples'
            when bootstrap.metric is null then 'no resampling units'
            when bootstrap.denominator = 0 then grid.empty_denominator_reason
        end as null_reason
    from grid
    left join bootstrap
        on
            grid.run_id = bootstrap.run_id
            and grid.trace_id is not distinct from bootstrap.trace_id
            and grid.metric = bootstrap.metric

),

intervals as (

    select
        joined.*,
        joined.null_reason is null
        and joined.metric_kind = 'proportion'
        and joined.numerator = 0
        and joined.n_units > 0 as zero_events
    from joined

),

final as (

    select
        intervals.run_id,
        intervals.trace_id,
        intervals.model,
        intervals.model_name,
        intervals.revision,
        intervals.corpus_id,
        intervals.setting,
        intervals.setting_kind,
        intervals.unit_kind,
        intervals.trace_mode,
        intervals.trace_corpus_id,
        intervals.metric,
        intervals.base_metric,
        intervals.variant,
        intervals.metric_kind,
        intervals.unit,
        case when intervals.null_reason is null then intervals.bootstrap_value end as value,
        case
            when intervals.null_reason is not null then null
            when intervals.zero_events then 0.0
            else intervals.bootstrap_ci_low
        end as ci_low,
        case
            when intervals.null_reason is not null then null
            when intervals.zero_events then 0.0
            else intervals.bootstrap_ci_high
        end as ci_high,
        case
            when intervals.null_reason is not null then null
            when intervals.zero_events or intervals.bootstrap_ci_low is not null then 'percentile_bootstrap'
        end as ci_method,
        {{ propme_rule_of_three_upper('intervals.zero_events', 'intervals.n_units') }} as upper_rule_of_three,
        coalesce(intervals.n_units, 0) as n_units,
        coalesce(intervals.n_units_resampled, 0) as n_units_resampled,
        coalesce(intervals.n_generations, intervals.n_run_generations) as n_generations,
        coalesce(intervals.n_excluded, 0) as n_excluded,
        intervals.numerator,
        intervals.denominator,
        intervals.n_skipped_resamples,
        params.bootstrap_resamples as n_resamples,
        params.bootstrap_seed,
        params.ci_level,
        params.mid_span_tokens,
        params.long_span_tokens,
        intervals.null_reason,
        params.params
    from intervals
    cross join params

)

select * from final
