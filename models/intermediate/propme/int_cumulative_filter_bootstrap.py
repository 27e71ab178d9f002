"""One row per (run, tracing pass, 'metric@step') of int_cumulative_filter_units: value, percentile interval
and every replicate (for each step's propensity score), as int_setting_bootstrap does for the metrics."""


def model(dbt, session):
    dbt.config(materialized="table")
    from ingest.marts.common import arrow_of
    from ingest.marts.propme import Params
    from ingest.marts.propme_analyses import keyed_bootstrap

    params = Params.from_table(arrow_of(dbt.ref("int_propme_params")))
    units = dbt.ref("int_cumulative_filter_units").project(
        "run_id, trace_id, unit_id, unit_kind, metric_key as metric, num, den, n_generations, n_eligible")
    return keyed_bootstrap(arrow_of(units), params)
