{#- The current inputs of fct_generation_domains: one row per (generation, tracing pass) that the pass traced.
    What a pass retrieved for a generation is fixed by the pass and the traced text (its hash): a batch's
    spans, documents and traced_generations rows are written and replaced together. -#}
{% macro explore_domain_inputs() -%}
    select
        traced.generation_id,
        traced.trace_id,
        {{ propme_input_hash(['traced.trace_id', 'traced.generation_id', 'traced.text_hash']) }} as input_hash
    from {{ ref('stg_traced_generations') }} as traced
{%- endmacro %}
