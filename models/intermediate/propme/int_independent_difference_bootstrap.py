"""One row per (pair of prompt-free runs, metric both have): metric(run_a) - metric(run_b) with an independent
percentile bootstrap interval (each run resampled on its own stream, as in int_setting_bootstrap)."""


def model(dbt, session):
    dbt.config(materialized="table")
    from ingest.marts.common import arrow_of
    from ingest.marts.propme import Params, sql_in_list
    from ingest.marts.propme_analyses import independent_difference_bootstrap

    params = Params.from_table(arrow_of(dbt.ref("int_propme_params")))
    pairs = arrow_of(dbt.ref("int_unpaired_run_pairs"))
    runs = sorted(set(pairs.column("run_a").to_pylist()) | set(pairs.column("run_b").to_pylist()))
    units = dbt.ref("int_metric_units").filter(f"run_id in ({sql_in_list(runs)})")  # only the paired runs
    return independent_difference_bootstrap(pairs, arrow_of(units), params)
