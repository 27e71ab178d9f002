"""Mixture estimates with bootstrap intervals, one row per (run, classifier, estimator, domain), plus the
tokenizer estimates (estimator bpe_merges: one row per (model, domain), no run or classifier).

Every estimator of var mixture_estimators (ingest.mixture registry) runs on the run's generation posteriors
and the classifier's cross-fitted reference posteriors; intervals come from mixture_bootstrap_resamples
replicates resampling generations and reference documents (re-estimating C), seeded with
mixture_bootstrap_seed. All parameters are written into the rows (n_boot, seed, ci_level, params). These rows
are computed, incrementally by (classifier, run), in int_mixture_run_estimates; this table adds the run's model.
Tokenizer estimates come from stg_tokenizer_mixture_estimates as written by `lmaudit mixture tokenizer`
(ingest.mixture.tokenizer.marts); the membership-inference baselines (mia_*) from fct_mixture_mia_estimates
(`lmaudit score`), one row per (model, estimator, domain), no run or classifier."""


def model(dbt, session):
    dbt.config(materialized="table")
    from ingest.marts.common import arrow_of
    from ingest.marts.mixture import ESTIMATES_SCHEMA, with_mia_estimates
    from ingest.mixture.tokenizer.marts import with_tokenizer_estimates

    run_based = arrow_of(dbt.ref("int_mixture_run_estimates").order("run_id, classifier_id, estimator, domain_index"))
    generation_based = run_based.select(ESTIMATES_SCHEMA.names).cast(ESTIMATES_SCHEMA)
    with_tokenizer = with_tokenizer_estimates(generation_based, dbt.ref("stg_runs"),
                                              dbt.ref("stg_tokenizer_mixture_estimates"))
    return with_mia_estimates(with_tokenizer, dbt.ref("fct_mixture_mia_estimates"))
