"""One row per (run, tracing pass, 'te@bucket') of int_source_duplication_units: the targeted-extraction rate
of the prompts whose source sequence falls in the bucket, with its percentile interval (the run's prompts are
resampled, as for its own metrics; prompts of other buckets add nothing to the ratio)."""


def model(dbt, session):
    dbt.config(materialized="table")
    from ingest.marts.common import arrow_of
    from ingest.marts.propme import Params
    from ingest.marts.propme_analyses import keyed_bootstrap

    params = Params.from_table(arrow_of(dbt.ref("int_propme_params")))
    units = dbt.ref("int_source_duplication_units").project(
        "run_id, trace_id, unit_id, unit_kind, metric_key as metric, num, den, n_generations, n_eligible")
    return keyed_bootstrap(arrow_of(units), params)
