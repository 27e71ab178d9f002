"""Mixture estimates with bootstrap intervals, one row per (run, classifier, estimator, domain).

Every estimator of var mixture_estimators (ingest.mixture registry) runs on the run's generation posteriors
and the classifier's cross-fitted reference posteriors; intervals come from mixture_bootstrap_resamples
replicates resampling generations and reference documents (re-estimating C), seeded with
mixture_bootstrap_seed. All parameters are written into the rows (n_boot, seed, ci_level, params)."""


def model(dbt, session):
    dbt.config(materialized="table")
    from ingest.classify.marts import estimates_table

    return estimates_table(dbt.ref("stg_classifiers"), dbt.ref("int_mixture_reference_posteriors"),
                           dbt.ref("int_mixture_generation_posteriors"), dbt.ref("int_mixture_params"))
