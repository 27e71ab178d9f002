-- One row per (run, tracing pass, resampling unit, metric): the unit's numerator and denominator.
-- A metric's value is sum(num) / sum(den) over units; the bootstrap resamples units (a prompt with all its
-- samples, or a generation in prompt-free settings). Degenerate generations are left out of numerators and
-- denominators, but their unit stays (it is resampled, and paired with other runs). Blank (empty or
-- whitespace-only) generations stay in every metric as PropMe defines them; fmr_nonblank leaves them out.
-- Incremental by (run, tracing pass) (macros/propme_run_incremental.sql): a later build computes only the runs
-- whose facts changed (new, re-imported, re-traced, a changed var); rows of stale runs are deleted first.
{{ config(
    materialized='incremental',
    incremental_strategy='append',
    on_schema_change='fail',
    pre_hook="{{ propme_delete_stale(['run_id', 'trace_id'], propme_run_fact_hashes()) }}"
) }}

with

params as (

    select * from {{ ref('int_propme_params') }}

),

todo as (

    {{ propme_runs_to_compute() }}

),

facts as (

    select
        facts.*,
        todo.input_hash as run_input_hash
    from {{ ref('int_generation_facts') }} as facts
    inner join todo on facts.run_id = todo.run_id and facts.trace_id is not distinct from todo.trace_id

),

flags as (

    select
        facts.run_id,
        facts.trace_id,
        facts.unit_id,
        facts.unit_kind,
        facts.run_input_hash,
        {{ propme_metric_flags('facts', 'params') }}
    from facts
    cross join params

),

kept as (

    select
        flags.*,
        flags.not_degenerate as ok,
        flags.not_degenerate and not flags.is_blank as ok_nonblank,
        flags.not_degenerate and not flags.is_code_like as ok_nl,
        not flags.not_degenerate as is_degenerate
    from flags

),

per_unit as (

    select
        run_id,
        trace_id,
        unit_id,
        any_value(unit_kind) as unit_kind,
        any_value(run_input_hash) as input_hash,
        count(*) as n_gen,
        count(*) filter (where ok) as n_ok,
        count(*) filter (where ok_nl) as n_ok_nl,
        count(*) filter (where ok and has_true_continuation) as n_te,
        count(*) filter (where is_degenerate) as n_degenerate,
        count(*) filter (where is_blank) as n_blank,
        count(*) filter (where ok_nonblank) as n_ok_nonblank,
        count(*) filter (where ok_nonblank and fm_raw) as fmr_nonblank_hits,
        count(*) filter (where ok and is_code_like) as n_code_like,
        count(*) filter (where ok and fm_raw) as fmr_hits,
        count(*) filter (where ok and fm_norm) as fmr_normalized_hits,
        count(*) filter (where ok and fm_mid) as fmr20_hits,
        count(*) filter (where ok and fm_long) as fmr50_hits,
        coalesce(sum(longest_span) filter (where ok), 0) as als_sum,
        coalesce(sum(nv_sum) filter (where ok), 0) as nv_sum,
        coalesce(sum(n_nv_docs) filter (where ok), 0) as nv_pairs,
        coalesce(sum(nv_sum_long) filter (where ok), 0) as nv_sum_long,
        count(*) filter (where ok and r_mid) as r20_hits,
        count(*) filter (where ok and r_long) as r50_hits,
        count(*) filter (where ok and (fm_mid or r_long)) as long_match_hits,
        count(*) filter (where ok_nl and fm_raw) as fmr_nl_hits,
        count(*) filter (where ok_nl and fm_mid) as fmr20_nl_hits,
        count(*) filter (where ok_nl and fm_long) as fmr50_nl_hits,
        coalesce(sum(longest_span) filter (where ok_nl), 0) as als_nl_sum,
        coalesce(sum(nv_sum) filter (where ok_nl), 0) as nv_nl_sum,
        coalesce(sum(n_nv_docs) filter (where ok_nl), 0) as nv_nl_pairs,
        coalesce(sum(nv_sum_long) filter (where ok_nl), 0) as nv_nl_sum_long,
        count(*) filter (where ok_nl and r_mid) as r20_nl_hits,
        count(*) filter (where ok_nl and r_long) as r50_nl_hits,
        count(*) filter (where ok and is_once) as r50_once_hits,
        count(*) filter (where ok and is_lt10) as r50_rare_hits,
        count(*) filter (where ok and has_true_continuation and te_hit) as te_hits
    from kept
    group by run_id, trace_id, unit_id

),

metric_lists as (

    select
        run_id,
        trace_id,
        unit_id,
        unit_kind,
        input_hash,
        n_gen,
        [
            { 'metric': 'fmr', 'num': fmr_hits, 'den': n_ok, 'n_eligible': n_ok, 'prompt_level': false },
            {
                'metric': 'fmr_normalized', 'num': fmr_normalized_hits, 'den': n_ok, 'n_eligible': n_ok,
                'prompt_level': false
            },
            { 'metric': 'fmr20', 'num': fmr20_hits, 'den': n_ok, 'n_eligible': n_ok, 'prompt_level': false },
            { 'metric': 'fmr50', 'num': fmr50_hits, 'den': n_ok, 'n_eligible': n_ok, 'prompt_level': false },
            { 'metric': 'als', 'num': als_sum, 'den': n_ok, 'n_eligible': n_ok, 'prompt_level': false },
            { 'metric': 'nvr', 'num': nv_sum, 'den': nv_pairs, 'n_eligible': n_ok, 'prompt_level': false },
            { 'metric': 'nvr50', 'num': nv_sum_long, 'den': nv_pairs, 'n_eligible': n_ok, 'prompt_level': false },
            { 'metric': 'r20', 'num': r20_hits, 'den': n_ok, 'n_eligible': n_ok, 'prompt_level': false },
            { 'metric': 'r50', 'num': r50_hits, 'den': n_ok, 'n_eligible': n_ok, 'prompt_level': false },
            { 'metric': 'fmr_nl', 'num': fmr_nl_hits, 'den': n_ok_nl, 'n_eligible': n_ok_nl, 'prompt_level': false },
            {
                'metric': 'fmr20_nl', 'num': fmr20_nl_hits, 'den': n_ok_nl, 'n_eligible': n_ok_nl,
                'prompt_level': false
            },
            {
                'metric': 'fmr50_nl', 'num': fmr50_nl_hits, 'den': n_ok_nl, 'n_eligible': n_ok_nl,
                'prompt_level': false
            },
            { 'metric': 'als_nl', 'num': als_nl_sum, 'den': n_ok_nl, 'n_eligible': n_ok_nl, 'prompt_level': false },
            { 'metric': 'nvr_nl', 'num': nv_nl_sum, 'den': nv_nl_pairs, 'n_eligible': n_ok_nl, 'prompt_level': false },
            {
                'metric': 'nvr50_nl', 'num': nv_nl_sum_long, 'den': nv_nl_pairs, 'n_eligible': n_ok_nl,
                'prompt_level': false
            },
            { 'metric': 'r20_nl', 'num': r20_nl_hits, 'den': n_ok_nl, 'n_eligible': n_ok_nl, 'prompt_level': false },
            { 'metric': 'r50_nl', 'num': r50_nl_hits, 'den': n_ok_nl, 'n_eligible': n_ok_nl, 'prompt_level': false },
            { 'metric': 'r50_once', 'num': r50_once_hits, 'den': n_ok, 'n_eligible': n_ok, 'prompt_level': false },
            { 'metric': 'r50_lt10', 'num': r50_rare_hits, 'den': n_ok, 'n_eligible': n_ok, 'prompt_level': false },
            { 'metric': 'te', 'num': te_hits, 'den': n_te, 'n_eligible': n_te, 'prompt_level': false },
            {
                'metric': 'te_any10', 'num': cast(te_hits > 0 as integer), 'den': cast(n_te > 0 as integer),
                'n_eligible': n_te, 'prompt_level': true
            },
            {
                'metric': 'fmr20_any10', 'num': cast(fmr20_hits > 0 as integer), 'den': cast(n_ok > 0 as integer),
                'n_eligible': n_ok, 'prompt_level': true
            },
            {
                'metric': 'r50_any10', 'num': cast(r50_hits > 0 as integer), 'den': cast(n_ok > 0 as integer),
                'n_eligible': n_ok, 'prompt_level': true
            },
            {
                'metric': 'long_match_any10', 'num': cast(long_match_hits > 0 as integer),
                'den': cast(n_ok > 0 as integer), 'n_eligible': n_ok, 'prompt_level': true
            },
            {
                'metric': 'fmr20_any10_mean', 'num': fmr20_hits, 'den': cast(fmr20_hits > 0 as integer),
                'n_eligible': n_ok, 'prompt_level': true
            },
            {
                'metric': 'r50_any10_mean', 'num': r50_hits, 'den': cast(r50_hits > 0 as integer),
                'n_eligible': n_ok, 'prompt_level': true
            },
            {
                'metric': 'degenerate_rate', 'num': n_degenerate, 'den': n_gen, 'n_eligible': n_gen,
                'prompt_level': false
            },
            {
                'metric': 'code_like_rate', 'num': n_code_like, 'den': n_ok, 'n_eligible': n_ok,
                'prompt_level': false
            },
            {
                'metric': 'fmr_nonblank', 'num': fmr_nonblank_hits, 'den': n_ok_nonblank, 'n_eligible': n_ok_nonblank,
                'prompt_level': false
            },
            {
                'metric': 'blank_rate', 'num': n_blank, 'den': n_gen, 'n_eligible': n_gen, 'prompt_level': false
            }
        ] as metric_rows
    from per_unit

),

unpivoted as (

    select
        run_id,
        trace_id,
        unit_id,
        unit_kind,
        input_hash,
        n_gen,
        unnest(metric_rows) as m
    from metric_lists

),

final as (

    select
        unpivoted.run_id,
        unpivoted.trace_id,
        unpivoted.unit_id,
        unpivoted.unit_kind,
        unpivoted.m.metric,
        cast(unpivoted.m.num as double) as num,
        cast(unpivoted.m.den as double) as den,
        unpivoted.n_gen as n_generations,
        cast(unpivoted.m.n_eligible as bigint) as n_eligible,
        unpivoted.input_hash
    from unpivoted
    where not (unpivoted.m.prompt_level and unpivoted.unit_kind = 'generation')

)

select * from final
