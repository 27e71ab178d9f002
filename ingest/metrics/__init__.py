"""PropMe metric math (docs/propme-method.md, sections 4 and 5), imported by the dbt models.

- `text`: the per-text checks (degenerate, code-like, repetition loop, targeted extraction); each has ONE
  definition here and reaches SQL as a DuckDB UDF through `dbt_plugin`.
- `bootstrap`: percentile bootstrap of ratio-of-sums metrics, the propensity metric, paired differences,
  the rule-of-three bound kept beside a zero-event [0, 0]; the resampling protocol is documented there so that it can be reimplemented.
- The table-in, table-out functions behind the dbt Python models (`int_*_bootstrap`) are in `ingest.marts.propme`.
"""
