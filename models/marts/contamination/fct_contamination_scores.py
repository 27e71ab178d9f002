"""The model's benchmark score on clean vs contaminated items, one row per (benchmark, tracing pass) with
scored items, with percentile-bootstrap intervals (ingest.contamination.scores; vars contamination_bootstrap_*,
contamination_ci_level, written into every row)."""


def model(dbt, session):
    dbt.config(materialized="table")
    from ingest.contamination.scores import scores_table

    return scores_table(dbt.ref("fct_contamination_items"), dbt.ref("int_contamination_params"))
