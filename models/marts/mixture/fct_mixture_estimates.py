"""Mixture estimates with bootstrap intervals, one row per (run, classifier, estimator, domain), plus the
tokenizer estimates (estimator bpe_merges: one row per (model, domain), no run or classifier).

Every estimator of var mixture_estimators (ingest.mixture registry) runs on the run's generation posteriors
and the classifier's cross-fitted reference posteriors; intervals come from mixture_bootstrap_resamples
replicates resampling generations and reference documents (re-estimating C), seeded with
mixture_bootstrap_seed. All parameters are written into the rows (n_boot, seed, ci_level, params).
Tokenizer estimates come from stg_tokenizer_mixture_estimates as written by `lmaudit mixture tokenizer`
(ingest.mixture.tokenizer.marts); the membership-inference baselines (mia_*) from fct_mixture_mia_estimates
(`lmaudit score`), one row per (model, estimator, domain), no run or classifier."""


def model(dbt, session):
    dbt.config(materialized="table")
    from ingest.marts.mixture import estimates_table, with_mia_estimates
    from ingest.mixture.tokenizer.marts import with_tokenizer_estimates

    generation_based = estimates_table(dbt.ref("stg_classifiers"), dbt.ref("int_mixture_reference_posteriors"),
                                       dbt.ref("int_mixture_generation_posteriors"), dbt.ref("int_mixture_params"))
    with_tokenizer = with_tokenizer_estimates(generation_based, dbt.ref("stg_runs"),
                                              dbt.ref("stg_tokenizer_mixture_estimates"))
    return with_mia_estimates(with_tokenizer, dbt.ref("fct_mixture_mia_estimates"))
