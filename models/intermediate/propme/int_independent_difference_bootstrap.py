"""One row per (pair of prompt-free runs, metric both have): metric(run_a) - metric(run_b) with an independent
percentile bootstrap interval: each run's replicates are its own in int_setting_bootstrap (its own stream),
read back, not drawn again."""


def model(dbt, session):
    dbt.config(materialized="table")
    from ingest.marts.common import arrow_of
    from ingest.marts.propme import Params, sql_in_list
    from ingest.marts.propme_analyses import independent_difference_bootstrap

    params = Params.from_table(arrow_of(dbt.ref("int_propme_params")))
    pairs = arrow_of(dbt.ref("int_unpaired_run_pairs"))
    runs = sorted(set(pairs.column("run_a").to_pylist()) | set(pairs.column("run_b").to_pylist()))
    setting = dbt.ref("int_setting_bootstrap").filter(f"run_id in ({sql_in_list(runs)})").project(
        "run_id, trace_id, metric, value, n_units_resampled, replicates")  # only the paired runs
    return independent_difference_bootstrap(pairs, arrow_of(setting), params)
