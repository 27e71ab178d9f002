"""One row per (run, tracing pass, metric): value = sum(num) / sum(den) over the units of
`int_metric_units`, its percentile bootstrap interval, and (for the PM metrics) the bootstrap replicates that
`int_propensity_bootstrap` pairs. The math and the resampling protocol: `ingest/metrics/bootstrap.py`."""


def model(dbt, session):
    dbt.config(materialized="table")
    from ingest.marts.common import arrow_of
    from ingest.marts.propme import Params, setting_bootstrap

    params = Params.from_table(arrow_of(dbt.ref("int_propme_params")))
    return setting_bootstrap(arrow_of(dbt.ref("int_metric_units")), params)
