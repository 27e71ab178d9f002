-- noqa: disable=LT02
{#
  int_document_reproductions is incremental by (run, tracing pass), as the PropMe per-run models
  (macros/propme_run_incremental.sql), but over its own groups: every run (whatever its purpose) and every pass
  that traced it, not only int_run_traces' PropMe ones, so int_generation_facts' hashes do not cover it.

  A group's rows come from its current traces (a generation whose traced text hash is its text's md5), the
  spans and documents the pass found for them (fixed by the pass and the traced text's hash), the run's model,
  setting and purpose, the pass's corpus or index folders, and the vars it reads: mid_span_tokens and the loop
  vars of int_span_loops (whose rows are themselves fixed by the span, so by the pass and traced text). The group hash covers exactly these, order-free
  (rows enter through DuckDB's hash(), summed and xor-ed). Before the model runs, `propme_delete_stale` deletes
  the rows of groups whose hash is not current (an added, re-imported, re-traced or removed run, a changed var);
  the model computes the groups with no rows left, so the table equals a full refresh.
#}

{% macro provenance_reproduction_hashes() -%}
    {%- set row_hash -%}hash(traced.generation_id, traced.text_hash){%- endset -%}
    select
        generations.run_id,
        traced.trace_id,
        {{ propme_input_hash([
            'count(*)', 'sum(cast(' ~ row_hash ~ ' as hugeint))', 'bit_xor(' ~ row_hash ~ ')',
            'any_value(runs.model)', 'any_value(runs.setting)', 'any_value(runs.purpose)',
            'any_value(runs.run_id is null)', 'any_value(trace_runs.corpus_id)', 'any_value(trace_runs.index_dir)',
            'any_value(params.mid_span_tokens)', 'any_value(params.loop_min_tokens)',
            'any_value(params.loop_max_period)', 'any_value(params.loop_min_repeats)',
            'any_value(params.loop_min_share)'
        ]) }} as input_hash
    from {{ ref('stg_traced_generations') }} as traced
    cross join {{ ref('int_propme_params') }} as params
    inner join {{ ref('stg_generations') }} as generations
        on traced.generation_id = generations.generation_id and traced.text_hash = md5(generations.text)
    left join {{ ref('stg_runs') }} as runs on generations.run_id = runs.run_id
    left join {{ ref('stg_trace_runs') }} as trace_runs on traced.trace_id = trace_runs.trace_id
    group by generations.run_id, traced.trace_id
{%- endmacro %}

{#- The (run, tracing pass) groups int_document_reproductions computes in this build: all of them on a first
    build or a full refresh, else those with no rows left after `propme_delete_stale`. -#}
{% macro provenance_reproductions_to_compute() -%}
    select * from ({{ provenance_reproduction_hashes() }}) as run_hashes
    {{ propme_rows_to_compute('run_hashes', ['run_id', 'trace_id']) }}
{%- endmacro %}
