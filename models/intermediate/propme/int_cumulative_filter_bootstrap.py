"""One row per (run, tracing pass, 'metric@step') of int_cumulative_filter_units: value, percentile interval
and every replicate (for each step's propensity score), as int_setting_bootstrap does for the metrics.
Incremental by run, like int_setting_bootstrap (`int_cumulative_filter_bootstrap_inputs`)."""


def model(dbt, session):
    dbt.config(materialized="incremental", incremental_strategy="append", on_schema_change="fail")
    from ingest.marts.common import arrow_of
    from ingest.marts.incremental import incremental_by_run
    from ingest.marts.propme import UNIT_ORDER, Params
    from ingest.marts.propme_analyses import keyed_bootstrap

    params = Params.from_table(arrow_of(dbt.ref("int_propme_params")))
    units = dbt.ref("int_cumulative_filter_units").project(
        "run_id, trace_id, unit_id, metric_key as metric, num, den, n_generations, n_eligible")
    return incremental_by_run(dbt, session, units, dbt.ref("int_cumulative_filter_bootstrap_inputs"),
                              lambda rows: keyed_bootstrap(rows, params), order=UNIT_ORDER)
