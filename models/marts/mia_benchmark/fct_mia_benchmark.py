"""The index-labelled membership-inference benchmark: per corpus, model, scoring convention, score and domain
(and 'all' pooled), members, non-members and excluded ambiguous candidates, AUC with a bootstrap interval
and TPR at 1 % and 0.1 % FPR, as mimir reports them (ingest.mia_benchmark.marts, docs/mia-benchmark.md)."""


def model(dbt, session):
    dbt.config(materialized="table")
    from ingest.mia_benchmark.marts import benchmark_table

    return benchmark_table(dbt.ref("int_mia_benchmark_scores"), dbt.ref("stg_mia_labels"))
