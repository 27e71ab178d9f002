"""lmaudit ingestion: everything that writes into the warehouse, and the math the dbt models import."""

__version__ = "0.1.0"
