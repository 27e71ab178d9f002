-- noqa: disable=LT02
{#
  Incremental mixture models, by (classifier, run): int_mixture_generation_posteriors and int_mixture_run_estimates
  (the per-run bootstraps behind fct_mixture_estimates).

  A group's posteriors come from the classifier's generation outputs for the run's generations (an output counts
  while its text_hash is the md5 of the generation's current text) and the classifier's name. Its estimates come
  from those posteriors, the classifier (name, domains, params) and its cross-fitted reference posteriors (the
  calibration side: C and the calibration set) and the mixture vars (written into every row as `params`). Each
  group hash covers exactly these, order-free (rows enter through DuckDB's hash(), summed and xor-ed; texts
  through hash(), the md5 is computed only for the groups that are recomputed). Any change to a classifier's
  reference side changes the hash of every run it scored; a changed mixture var changes every hash. Before the
  model runs, `propme_delete_stale` (macros/propme_incremental.sql) deletes the rows of groups whose hash is not
  current (an added, re-scored, re-imported or removed run, a retrained classifier, a changed var); the model
  computes the groups with no rows left (int_mixture_run_estimates, a Python model, deletes its stale rows
  itself: ingest/marts/incremental.py). A run's bootstrap is seeded with mixture_bootstrap_seed alone and reads
  its own group only, so a recomputed group equals what a full refresh gives.
#}

{#- The (classifier, run) groups of int_mixture_generation_posteriors with their input hash. -#}
{% macro mixture_posterior_hashes() -%}
    {%- set row_hash -%}
        hash(outputs.item_id, outputs.text_hash, outputs.probs, hash(generations.text))
    {%- endset -%}
    select
        outputs.classifier_id,
        generations.run_id,
        {{ propme_input_hash([
            'count(*)', 'sum(cast(' ~ row_hash ~ ' as hugeint))', 'bit_xor(' ~ row_hash ~ ')',
            'any_value(classifiers.name)'
        ]) }} as input_hash
    from {{ ref('stg_classifier_outputs') }} as outputs
    inner join {{ ref('stg_classifiers') }} as classifiers on outputs.classifier_id = classifiers.classifier_id
    inner join {{ ref('stg_generations') }} as generations on outputs.item_id = generations.generation_id
    where outputs.item_kind = 'generation'
    group by outputs.classifier_id, generations.run_id
{%- endmacro %}

{#- The groups int_mixture_generation_posteriors computes in this build: all on a first build or a full
    refresh, else those with no rows left after `propme_delete_stale`. -#}
{% macro mixture_posteriors_to_compute() -%}
    select * from ({{ mixture_posterior_hashes() }}) as run_hashes
    {{ propme_rows_to_compute('run_hashes', ['classifier_id', 'run_id']) }}
{%- endmacro %}
