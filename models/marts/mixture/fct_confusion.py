"""Soft and hard confusion matrices of every classifier, from its cross-fitted reference posteriors outside
the calibration fold (rows = true domain, columns = predicted domain), with the condition number of each
matrix and the per-domain support. The math: ingest.mixture.confusion (via ingest/marts/mixture.py)."""


def model(dbt, session):
    dbt.config(materialized="table")
    from ingest.marts.mixture import confusion_table

    return confusion_table(dbt.ref("stg_classifiers"), dbt.ref("int_mixture_reference_posteriors"))
