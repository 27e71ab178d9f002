-- noqa: disable=LT02
{#
  Per-run incremental SQL models (int_metric_units, int_cumulative_filter_units, int_long_match_categories).

  Their rows belong to one (run, tracing pass) and are computed from that group's rows of int_generation_facts
  (and, for the long-match categories, the spans and documents of the same generations and pass). A fact row's
  own input_hash already covers everything it and those spans come from: the generation's text, the tracing
  pass and traced text, the text checks and every propme_* var (macros/propme_incremental.sql). So a group's
  hash over its fact rows' hashes changes exactly when one of the group's rows would change. Each row stores its
  group's hash; before the model runs, `propme_delete_stale` deletes the rows of groups whose hash is not
  current (a new, re-imported, re-traced or removed run, a changed var), and the model computes the groups that
  have no rows left. The table therefore equals a full refresh, and a build after one added run computes
  that run only.

  The hash is order-free (rows enter through DuckDB's hash(), summed and xor-ed), so it does not depend on the
  order DuckDB reads the facts in.
#}

{% macro propme_run_fact_hashes() -%}
    {%- set row_hash -%}hash(facts.generation_id, facts.input_hash){%- endset -%}
    select
        facts.run_id,
        facts.trace_id,
        {{ propme_input_hash(['count(*)', 'sum(cast(' ~ row_hash ~ ' as hugeint))', 'bit_xor(' ~ row_hash ~ ')']) }}
            as input_hash
    from {{ ref('int_generation_facts') }} as facts
    group by facts.run_id, facts.trace_id
{%- endmacro %}

{#- The (run, tracing pass) groups a per-run model computes in this build: every group on a first build or a
    full refresh, else the groups with no rows left after `propme_delete_stale`. -#}
{% macro propme_runs_to_compute() -%}
    select * from ({{ propme_run_fact_hashes() }}) as run_hashes
    {{ propme_rows_to_compute('run_hashes', ['run_id', 'trace_id']) }}
{%- endmacro %}
