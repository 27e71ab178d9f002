"""One row per (run pair sharing prompts, metric): metric(run_a) - metric(run_b) on the shared prompts, with
a paired percentile bootstrap interval (both runs computed from the same drawn prompts)."""


def model(dbt, session):
    dbt.config(materialized="table")
    from ingest.marts.common import arrow_of
    from ingest.marts.propme import Params, difference_bootstrap, sql_in_list

    params = Params.from_table(arrow_of(dbt.ref("int_propme_params")))
    pairs = arrow_of(dbt.ref("int_run_pairs"))
    runs = sorted(set(pairs.column("run_a").to_pylist()) | set(pairs.column("run_b").to_pylist()))
    units = dbt.ref("int_metric_units").filter(f"run_id in ({sql_in_list(runs)})")  # only the paired runs
    return difference_bootstrap(pairs, arrow_of(units), params)
