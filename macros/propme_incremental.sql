-- noqa: disable=LT02
-- (sqlfluff lays out the rendered macros as one statement: their indents follow the models that call them)
{#
  Incremental PropMe models (int_generation_text_checks, int_span_loops, int_generation_facts).

  Each row stores `input_hash`: an md5 over everything the row is computed from (the texts' own hashes, the
  tracing pass, the research vars it uses). Texts enter through DuckDB's 64-bit hash(), ~6x cheaper than md5
  over 200 MB of text; should another DuckDB version hash differently, every row is recomputed once. Before the model runs, `propme_delete_stale` deletes every row
  whose key is gone from the lake or whose inputs changed (a re-imported text, a re-traced run, a changed
  propme_* var); the model then computes only the keys that have no row left. So the table always equals a
  full refresh, and `lmaudit build --full-refresh` rebuilds it from nothing.
#}

{% macro propme_input_hash(parts) -%}
    md5(concat_ws('|'
    {%- for part in parts %}, coalesce(cast({{ part }} as varchar), 'null'){% endfor -%}
    ))
{%- endmacro %}

{#- Whether the model's existing table has these columns. A table built before the model was incremental (or
    before a column was added) has not: the stale-row delete is skipped, and the build stops with dbt's
    on_schema_change message, which `lmaudit build` turns into one line naming `--full-refresh`, instead of a
    binder error in the pre-hook. -#}
{% macro incremental_has_columns(names) -%}
    {%- set have = adapter.get_columns_in_relation(this) | map(attribute='name') | map('lower') | list -%}
    {{ return(names | reject('in', have) | list | length == 0) }}
{%- endmacro %}

{% macro propme_delete_stale(keys, current_sql) -%}
    {%- if is_incremental() and incremental_has_columns(keys + ['input_hash']) -%}
        delete from {{ this }} as old
        where not exists (
            select 1
            from ({{ current_sql }}) as cur
            where
            {%- for key in keys %}
                cur.{{ key }} is not distinct from old.{{ key }} and
            {%- endfor %}
                cur.input_hash = old.input_hash
        )
    {%- else -%}
        select 1
    {%- endif -%}
{%- endmacro %}

{% macro propme_rows_to_compute(alias, keys) -%}
    {%- if is_incremental() -%}
        where not exists (
            select 1
            from {{ this }} as old
            where
            {%- for key in keys %}
                old.{{ key }} is not distinct from {{ alias }}.{{ key }}{{ " and" if not loop.last }}
            {%- endfor %}
        )
    {%- endif -%}
{%- endmacro %}

{#- The current inputs of int_generation_text_checks: one row per generation. -#}
{% macro propme_text_check_inputs() -%}
    select
        generations.generation_id,
        generations.text,
        prompts.true_continuation,
        {{ propme_input_hash([
            'hash(generations.text)', 'hash(prompts.true_continuation)', 'prompts.prompt_id is not null',
            'params.degenerate_max_compression', 'params.degenerate_max_letter_share', 'params.code_min_lines',
            'params.code_min_line_share', 'params.code_max_letter_share'
        ]) }} as input_hash
    from {{ ref('stg_generations') }} as generations
    cross join {{ ref('int_propme_params') }} as params
    left join {{ ref('stg_prompts') }} as prompts on generations.prompt_id = prompts.prompt_id
{%- endmacro %}

{#- The current inputs of int_span_loops: one row per span of at least loop_min_tokens tokens. -#}
{% macro propme_span_loop_inputs() -%}
    select
        spans.span_id,
        spans.trace_id,
        spans.generation_id,
        spans.length,
        spans.text,
        {{ propme_input_hash([
            'spans.trace_id', 'spans.generation_id', 'spans.length', 'hash(spans.text)', 'params.loop_min_tokens',
            'params.loop_max_period', 'params.loop_min_repeats', 'params.loop_min_share'
        ]) }} as input_hash
    from {{ ref('stg_spans') }} as spans
    cross join {{ ref('int_propme_params') }} as params
    where spans.length >= params.loop_min_tokens
{%- endmacro %}

{#- The input hash of one (run, tracing pass) of a per-run bootstrap (int_setting_bootstrap,
    int_cumulative_filter_bootstrap): its resampling units' rows, in any order, and the bootstrap vars. A run's
    replicates come from its own seeded stream and its own units only, so this hash is everything they depend
    on. Rows enter through DuckDB's hash(), summed and xor-ed (order-free; each row is one (unit, metric)).
    Numerators and denominators are hashed at float precision (~7 digits): a unit's sums over its samples are
    parallel double sums whose last bits change from build to build, which must not count as a change. -#}
{% macro propme_bootstrap_input_hash(units, metric_column) -%}
    {%- set row_hash -%}
        hash({{ units }}.unit_id, {{ units }}.unit_kind, {{ units }}.{{ metric_column }}, cast({{ units }}.num as float),
        cast({{ units }}.den as float), {{ units }}.n_generations, {{ units }}.n_eligible)
    {%- endset -%}
    {{ propme_input_hash([
        'count(*)', 'sum(cast(' ~ row_hash ~ ' as hugeint))', 'bit_xor(' ~ row_hash ~ ')',
        'any_value(params.bootstrap_resamples)', 'any_value(params.bootstrap_seed)', 'any_value(params.ci_level)'
    ]) }}
{%- endmacro %}
