"""One row per (run pair sharing prompts, metric): metric(run_a) - metric(run_b) on the shared prompts, with
a paired percentile bootstrap interval (both runs computed from the same drawn prompts). Incremental by pair
(`ingest/marts/incremental.py`): a pair is resampled again only when either run's units or the bootstrap vars
changed (`int_run_difference_bootstrap_inputs`)."""


def model(dbt, session):
    dbt.config(materialized="incremental", incremental_strategy="append", on_schema_change="fail")
    from ingest.marts.common import arrow_of
    from ingest.marts.incremental import groups_to_compute, sql_group_filter, with_input_hash
    from ingest.marts.propme import Params, difference_bootstrap, sql_in_list

    keys = ("run_a", "run_b", "trace_id")
    params = Params.from_table(arrow_of(dbt.ref("int_propme_params")))
    groups = groups_to_compute(dbt, session, dbt.ref("int_run_difference_bootstrap_inputs"), keys)
    pairs = arrow_of(dbt.ref("int_run_pairs").filter(sql_group_filter(groups, keys)))
    runs = sorted(set(pairs.column("run_a").to_pylist()) | set(pairs.column("run_b").to_pylist()))
    units = dbt.ref("int_metric_units").filter(f"run_id in ({sql_in_list(runs)})")  # only the paired runs
    return with_input_hash(difference_bootstrap(pairs, arrow_of(units), params), groups, keys)
