-- noqa: disable=LT02
-- (sqlfluff lays out the rendered macro as one statement: its indents follow the model that calls it)
{#- The current inputs of int_generation_facts: one row per (generation, tracing pass), with the input hash of
    macros/propme_incremental.sql (what a pass found for a generation is fixed by the pass and the traced text's
    hash, so those stand for its spans, documents and counts; the text checks' own input_hash stands for theirs;
    `params` holds every var).

    The texts are hashed before any join (md5 to find the pass that traced the current text, DuckDB's hash()
    for the input hash), so the joins carry two hashes per generation, not its text: at 16x paper scale the
    texts are ~3 GB, which a join's hash table would have held (and spilled) under a 6 GB build budget
    (BENCHMARKS.md "Build memory and time at 1x-16x"). Same rows and the same input_hash as before. -#}
{% macro propme_generation_fact_inputs() -%}
    select
        run_traces.run_id,
        run_traces.trace_id,
        run_traces.setting,
        run_traces.unit_kind,
        generations.generation_id,
        generations.prompt_id,
        generations.sample_idx,
        traced.n_index_tokens,
        traced.generation_id is not null as is_traced,
        {{ propme_input_hash([
            'run_traces.run_id', 'run_traces.trace_id', 'run_traces.setting', 'run_traces.unit_kind',
            'generations.prompt_id', 'generations.sample_idx', 'generations.text_hash64', 'traced.text_hash',
            'traced.n_index_tokens', 'text_checks.input_hash', 'params.params'
        ]) }} as input_hash
    from {{ ref('int_run_traces') }} as run_traces
    cross join {{ ref('int_propme_params') }} as params
    inner join (
        select
            generation_id,
            run_id,
            prompt_id,
            sample_idx,
            md5(text) as text_md5,
            hash(text) as text_hash64
        from {{ ref('stg_generations') }}
    ) as generations on run_traces.run_id = generations.run_id
    left join {{ ref('stg_traced_generations') }} as traced
        on
            run_traces.trace_id = traced.trace_id
            and generations.generation_id = traced.generation_id
            and generations.text_md5 = traced.text_hash
    left join {{ ref('int_generation_text_checks') }} as text_checks
        on generations.generation_id = text_checks.generation_id
{%- endmacro %}
