"""One row per (specific prompt set, item group): mean similarity to the training data with a percentile
bootstrap interval, and the difference to the generic group with an independent bootstrap interval."""


def model(dbt, session):
    dbt.config(materialized="table")
    from ingest.marts.common import arrow_of
    from ingest.marts.prompt_closeness import closeness_bootstrap
    from ingest.marts.propme import Params

    params = Params.from_table(arrow_of(dbt.ref("int_propme_params")))
    return closeness_bootstrap(arrow_of(dbt.ref("stg_prompt_closeness")), params)
