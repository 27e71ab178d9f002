"""One row per (document set, document or NULL for the whole set, propensity run, attack run, tracing pass,
metric r20 / r50 / fmr): f_p, f_c and PM = f_p / (f_p + f_c) with percentile bootstrap intervals, and the attack
run's targeted extraction. PropMe's resampling protocol (ingest/metrics/bootstrap.py) over the per-run units; the
math and the streams: ingest/audit/marts.py."""


def model(dbt, session):
    dbt.config(materialized="table")
    from ingest.audit.marts import document_set_bootstrap
    from ingest.marts.common import arrow_of
    from ingest.marts.propme import Params

    params = Params.from_table(arrow_of(dbt.ref("int_propme_params")))
    units = arrow_of(dbt.ref("int_document_set_units"))
    pairs = arrow_of(dbt.ref("int_document_set_pairs"))
    sets = arrow_of(dbt.ref("stg_document_sets"))
    if params is None:
        from ingest.audit.marts import SCHEMA

        return SCHEMA.empty_table()
    return document_set_bootstrap(units, pairs, sets, params.n_resamples, params.seed, params.ci_level)
