"""One row per (propensity run, capability run, 'metric@step'): PM = f_p / (f_p + f_c) after the same filters
in both settings, with the interval over independently resampled rounds (as int_propensity_bootstrap)."""


def model(dbt, session):
    dbt.config(materialized="table")
    from ingest.marts.common import arrow_of
    from ingest.marts.propme import Params, propensity_bootstrap
    from ingest.marts.propme_analyses import with_all_metrics

    params = Params.from_table(arrow_of(dbt.ref("int_propme_params")))
    setting = arrow_of(dbt.ref("int_cumulative_filter_bootstrap"))
    return propensity_bootstrap(arrow_of(dbt.ref("int_propensity_pairs")), setting, with_all_metrics(params, setting))
