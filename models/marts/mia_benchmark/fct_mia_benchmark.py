"""The index-labelled membership-inference benchmark: per corpus, model, scoring convention, score and domain
(and 'all' pooled), members, non-members and excluded ambiguous candidates, AUC with a bootstrap interval
and TPR at 1 % and 0.1 % FPR, as mimir reports them (ingest.mia_benchmark.marts, docs/mia-benchmark.md).
The bootstrap's replicates, seed and level come from int_mia_benchmark_params (vars mia_benchmark_*)."""


def model(dbt, session):
    dbt.config(materialized="table")
    from ingest.mia_benchmark.marts import benchmark_table, params_of

    n_boot, seed, ci_level = params_of(dbt.ref("int_mia_benchmark_params"))
    return benchmark_table(dbt.ref("int_mia_benchmark_scores"), dbt.ref("stg_mia_labels"), n_boot, seed, ci_level)
