"""One row per (propensity run, capability run, PM metric): PM = f_p / (f_p + f_c) with its percentile
interval over rounds that pair independently resampled replicates of the two runs (rounds with
f_p + f_c = 0 skipped and counted), and the difference f_p - f_c with its interval."""


def model(dbt, session):
    dbt.config(materialized="table")
    from ingest.marts.common import arrow_of
    from ingest.marts.propme import Params, propensity_bootstrap

    params = Params.from_table(arrow_of(dbt.ref("int_propme_params")))
    return propensity_bootstrap(arrow_of(dbt.ref("int_propensity_pairs")), arrow_of(dbt.ref("int_setting_bootstrap")),
                                params)
