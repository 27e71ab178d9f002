"""The bootstrapped mixture estimates of every scored run, one row per (run, classifier, estimator, domain), with
the group's input hash: the generation-based rows of fct_mixture_estimates (math in ingest/mixture, glue in
ingest/marts/mixture.py: `estimates_table`).

Incremental by (classifier, run) (macros/mixture_incremental.sql): a run's bootstrap (mixture_bootstrap_resamples
replicates of every estimator) is the costly part of the mixture marts, and it depends only on the run's own
posteriors, the classifier's reference side and the vars. It first deletes the rows of groups whose hash in
int_mixture_estimate_inputs is not current; this model estimates the groups that have no rows left. Every group
is seeded with mixture_bootstrap_seed alone, so a recomputed group equals a full refresh's."""


def model(dbt, session):
    dbt.config(materialized="incremental", incremental_strategy="append", on_schema_change="fail")
    from ingest.marts.mixture_runs import group_estimates

    return group_estimates(dbt, session, dbt.ref("int_mixture_estimate_inputs"),
                           dbt.ref("int_mixture_generation_posteriors"), dbt.ref("stg_classifiers"),
                           dbt.ref("int_mixture_reference_posteriors"), dbt.ref("int_mixture_params"))
