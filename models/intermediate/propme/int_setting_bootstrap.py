"""One row per (run, tracing pass, metric): value = sum(num) / sum(den) over the units of
`int_metric_units`, its percentile bootstrap interval, and the bootstrap replicates (that
`int_propensity_bootstrap` pairs and `int_independent_difference_bootstrap` subtracts). The math and the
resampling protocol: `ingest/metrics/bootstrap.py`. Incremental by run (`ingest/marts/incremental.py`): a run
is resampled again only when its units or the bootstrap vars changed (`int_setting_bootstrap_inputs`)."""


def model(dbt, session):
    dbt.config(materialized="incremental", incremental_strategy="append", on_schema_change="fail")
    from ingest.marts.common import arrow_of
    from ingest.marts.incremental import incremental_by_run
    from ingest.marts.propme import UNIT_ORDER, Params, setting_bootstrap

    params = Params.from_table(arrow_of(dbt.ref("int_propme_params")))
    # only what the bootstrap reads: at 16x paper scale a run is 4.8M unit rows, and the hash and kind strings
    # were a sixth of the batch's memory
    units = dbt.ref("int_metric_units").project(
        "run_id, trace_id, unit_id, metric, num, den, n_generations, n_eligible")
    return incremental_by_run(dbt, session, units, dbt.ref("int_setting_bootstrap_inputs"),
                              lambda rows: setting_bootstrap(rows, params), order=UNIT_ORDER)
