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

{#- fct_explore_generations is incremental by run: a run's rows come from its generations (ids, prompt, sample,
    text), its model and setting, its generations' int_generation_facts rows (each fixed by its own input_hash)
    and their fct_generation_domains rows (fixed by theirs). The run hash covers exactly these, order-free. Its
    ordinals are the run's offset (the generations of the runs before it) plus the position inside the run;
    offsets are not hashed: an added or removed run shifts the ordinals of the runs after it, which the model's
    post-hook does in place (`explore_shift_ordinals`) instead of recomputing those runs. -#}
{% macro explore_generation_run_hashes() -%}
    {%- set gen_hash -%}hash(generations.generation_id, generations.prompt_id, generations.sample_idx,
        hash(generations.text)){%- endset -%}
    {%- set fact_hash -%}hash(facts.generation_id, facts.trace_id, facts.input_hash){%- endset -%}
    {%- set domain_hash -%}hash(domains.generation_id, domains.trace_id, domains.input_hash){%- endset -%}
    select
        shown.run_id,
        {{ propme_input_hash([
            'any_value(shown.model)', 'any_value(shown.setting)', 'any_value(shown.n)', 'any_value(shown.h_sum)',
            'any_value(shown.h_xor)', 'any_value(fact_hashes.n)', 'any_value(fact_hashes.h_sum)',
            'any_value(fact_hashes.h_xor)', 'any_value(domain_hashes.n)', 'any_value(domain_hashes.h_sum)',
            'any_value(domain_hashes.h_xor)'
        ]) }} as input_hash
    from (
        select
            generations.run_id,
            any_value(runs.model) as model,
            any_value(runs.setting) as setting,
            count(*) as n,
            sum(cast({{ gen_hash }} as hugeint)) as h_sum,
            bit_xor({{ gen_hash }}) as h_xor
        from {{ ref('stg_generations') }} as generations
        inner join {{ ref('stg_runs') }} as runs on generations.run_id = runs.run_id
        group by generations.run_id
    ) as shown
    left join (
        select
            generations.run_id,
            count(*) as n,
            sum(cast({{ fact_hash }} as hugeint)) as h_sum,
            bit_xor({{ fact_hash }}) as h_xor
        from {{ ref('int_generation_facts') }} as facts
        inner join {{ ref('stg_generations') }} as generations on facts.generation_id = generations.generation_id
        group by generations.run_id
    ) as fact_hashes on shown.run_id = fact_hashes.run_id
    left join (
        select
            generations.run_id,
            count(*) as n,
            sum(cast({{ domain_hash }} as hugeint)) as h_sum,
            bit_xor({{ domain_hash }}) as h_xor
        from {{ ref('fct_generation_domains') }} as domains
        inner join {{ ref('stg_generations') }} as generations on domains.generation_id = generations.generation_id
        group by generations.run_id
    ) as domain_hashes on shown.run_id = domain_hashes.run_id
    group by shown.run_id
{%- endmacro %}

{#- Each known run's first ordinal: how many generations of known runs sort before it (by run_id). -#}
{% macro explore_run_offsets() -%}
    select
        run_id,
        cast(coalesce(sum(n) over (order by run_id rows between unbounded preceding and 1 preceding), 0) as bigint)
            as run_offset
    from (
        select
            generations.run_id,
            count(*) as n
        from {{ ref('stg_generations') }} as generations
        inner join {{ ref('stg_runs') }} as runs on generations.run_id = runs.run_id
        group by generations.run_id
    ) as run_sizes
{%- endmacro %}

{#- Post-hook of fct_explore_generations: move the kept runs whose offset changed (a run added or removed before
    them) to their new offset; the rows computed in this build already have it. -#}
{% macro explore_shift_ordinals() -%}
    {%- if is_incremental() -%}
        update {{ this }} as shown
        set ordinal = shown.ordinal + shift.delta
        from (
            select
                kept.run_id,
                any_value(offsets.run_offset) - min(kept.ordinal) as delta
            from {{ this }} as kept
            inner join ({{ explore_run_offsets() }}) as offsets on kept.run_id = offsets.run_id
            group by kept.run_id
            having any_value(offsets.run_offset) <> min(kept.ordinal)
        ) as shift
        where shown.run_id = shift.run_id
    {%- else -%}
        select 1
    {%- endif -%}
{%- endmacro %}
