"""The raw Parquet lake: typed schemas, deterministic keys, atomic partition writes."""

from ingest.lake.keys import make_key, text_hash
from ingest.lake.schemas import ALL_SETTINGS, PURPOSES, SETTINGS, TABLES, TableSpec, spec
from ingest.lake.writer import Lake, partition_name

__all__ = ["ALL_SETTINGS", "Lake", "PURPOSES", "SETTINGS", "TABLES", "TableSpec", "make_key", "partition_name", "spec", "text_hash"]
