-- Personal data in reproduced text, per run, tracing pass and kind (email, phone, secret): how many of the run's
-- traced generations reproduce a span (>= var propme_mid_span_tokens tokens) holding an e-mail address, a
-- phone number or a key/token, and how many distinct values. Values are never here: `examples` are masked (first
-- 2 characters, ***, the kind). Only current traces count (the generation still has the traced text); a run
-- whose spans `lmaudit provenance` has not scanned yet has n_spans_scanned < n_reproduced_spans.
with

params as (

    select * from {{ ref('int_propme_params') }}

),

spans as (

    select * from {{ ref('stg_spans') }}

),

traced as (

    select * from {{ ref('stg_traced_generations') }}

),

generations as (

    select * from {{ ref('stg_generations') }}

),

runs as (

    select * from {{ ref('stg_runs') }}

),

scans as (

    select * from {{ ref('stg_personal_data_scans') }}

),

findings as (

    select * from {{ ref('stg_personal_data_findings') }}

),

kinds as (

    select unnest(['email', 'phone', 'secret']) as kind

),

current_traces as (

    select
        traced.trace_id,
        traced.generation_id,
        generations.run_id
    from traced
    inner join generations
        on traced.generation_id = generations.generation_id and traced.text_hash = md5(generations.text)

),

run_traces as (

    select
        run_id,
        trace_id,
        count(*) as n_generations
    from current_traces
    group by run_id, trace_id

),

reproduced_spans as (

    select
        current_traces.run_id,
        spans.trace_id,
        spans.generation_id,
        spans.span_id,
        scans.span_id is not null as is_scanned
    from spans
    cross join params
    inner join current_traces
        on spans.trace_id = current_traces.trace_id and spans.generation_id = current_traces.generation_id
    left join scans on spans.span_id = scans.span_id
    where spans.length >= params.mid_span_tokens

),

span_totals as (

    select
        run_id,
        trace_id,
        count(*) as n_reproduced_spans,
        count(*) filter (where is_scanned) as n_spans_scanned,
        count(distinct generation_id) as n_generations_reproducing
    from reproduced_spans
    group by run_id, trace_id

),

found as (

    select
        reproduced_spans.run_id,
        reproduced_spans.trace_id,
        findings.kind,
        count(distinct reproduced_spans.generation_id) as n_generations_with,
        count(distinct reproduced_spans.generation_id || '|' || findings.value_hash) as n_findings,
        count(distinct findings.value_hash) as n_distinct_values,
        list(distinct findings.masked order by findings.masked)[1:3] as examples
    from reproduced_spans
    inner join findings on reproduced_spans.span_id = findings.span_id
    group by reproduced_spans.run_id, reproduced_spans.trace_id, findings.kind

),

final as (

    select
        run_traces.run_id,
        run_traces.trace_id,
        runs.model,
        runs.setting,
        runs.purpose,
        kinds.kind,
        run_traces.n_generations,
        coalesce(span_totals.n_generations_reproducing, 0) as n_generations_reproducing,
        coalesce(span_totals.n_reproduced_spans, 0) as n_reproduced_spans,
        coalesce(span_totals.n_spans_scanned, 0) as n_spans_scanned,
        coalesce(found.n_generations_with, 0) as n_generations_with,
        coalesce(found.n_findings, 0) as n_findings,
        coalesce(found.n_distinct_values, 0) as n_distinct_values,
        coalesce(found.n_generations_with, 0) / run_traces.n_generations as share_generations_with,
        coalesce(found.examples, []) as examples
    from run_traces
    cross join kinds
    inner join runs on run_traces.run_id = runs.run_id
    left join span_totals on run_traces.run_id = span_totals.run_id and run_traces.trace_id = span_totals.trace_id
    left join found
        on
            run_traces.run_id = found.run_id
            and run_traces.trace_id = found.trace_id
            and kinds.kind = found.kind

)

select * from final
