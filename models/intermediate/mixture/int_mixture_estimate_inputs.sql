-- The input hash of every (classifier, run) group of int_mixture_run_estimates: the group's generation
-- posteriors (their own group hash), the classifier (name, domains, params), its reference posteriors (the
-- calibration side) and the mixture vars (macros/mixture_incremental.sql). A small table (one row per scored run
-- and classifier): the Python model int_mixture_run_estimates reads it to find the groups to recompute and to
-- delete the stale ones. Rows enter the reference hash through DuckDB's hash(), summed and xor-ed (order-free).
{% set ref_row_hash -%}
    hash(refs.ref_doc_id, refs.true_index, refs.fold, refs.is_calibration, refs.probs)
{%- endset %}
with

posteriors as (

    select
        classifier_id,
        run_id,
        any_value(input_hash) as posterior_hash
    from {{ ref('int_mixture_generation_posteriors') }}
    group by classifier_id, run_id

),

classifiers as (

    select * from {{ ref('stg_classifiers') }}

),

refs as (

    select * from {{ ref('int_mixture_reference_posteriors') }}

),

params as (

    select * from {{ ref('int_mixture_params') }}

),

reference as (

    select
        classifiers.classifier_id,
        {{ propme_input_hash([
            'any_value(classifiers.name)', 'any_value(classifiers.domains)', 'any_value(classifiers.params)',
            'count(refs.ref_doc_id)', 'sum(cast(' ~ ref_row_hash ~ ' as hugeint)) filter (refs.ref_doc_id is not null)',
            'bit_xor(' ~ ref_row_hash ~ ') filter (refs.ref_doc_id is not null)'
        ]) }} as reference_hash
    from classifiers
    left join refs on classifiers.classifier_id = refs.classifier_id
    group by classifiers.classifier_id

),

final as (

    select
        posteriors.classifier_id,
        posteriors.run_id,
        {{ propme_input_hash(['posteriors.posterior_hash', 'reference.reference_hash', 'params.params']) }}
            as input_hash
    from posteriors
    inner join reference on posteriors.classifier_id = reference.classifier_id
    cross join params

)

select * from final
