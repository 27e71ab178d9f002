"""One row per (lake partition, generation, tracing pass): `int_partition_span_facts` (the SQL, with its unit
tests) computed a range of lake partitions at a time, so the build holds a bounded part of the spans and documents
instead of the whole lake's (`ingest/marts/partitioned.py`). Incremental by partition: a partition is computed
again only when its spans or the propme_* vars changed (`int_generation_span_facts_inputs`)."""


def model(dbt, session):
    dbt.config(materialized="incremental", incremental_strategy="append", on_schema_change="fail")
    from ingest.marts.partitioned import by_partition, check_copartitioned

    spans, documents = dbt.ref("stg_spans"), dbt.ref("stg_span_documents")
    return by_partition(dbt, session, dbt.ref("int_partition_span_facts"),
                        dbt.ref("int_generation_span_facts_inputs"), "__lmaudit_generation_span_facts",
                        check=lambda: check_copartitioned(session, spans, documents))
