"""The Python behind dbt's Python models: table-in, table-out functions with fixed output schemas.

- `propme`: the bootstrap models of the PropMe metrics (`int_setting_bootstrap`, `int_propensity_bootstrap`,
  `int_run_difference_bootstrap`); the math is `ingest.metrics.bootstrap`.
- `mixture`: `fct_confusion` and `fct_mixture_estimates`; the math is `ingest.mixture`.
- `common`: what both need (reading a dbt relation as Arrow, a small thread pool with BLAS held to one
  thread, NaN -> NULL).

The models themselves (models/**/*.py) only read their refs and call one function here, so the logic is
importable, testable without dbt, and in one place.
"""
