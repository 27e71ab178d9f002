"""Python behind the dbt models of PropMe's further analyses (docs/propme-analyses.md).

- `independent_difference_bootstrap`: metric(run_a) - metric(run_b) for runs that share no prompts (the
  prompt-free settings), each run resampled on its own. Each run's replicates are its replicates in
  `int_setting_bootstrap` (stream key "setting", run, trace), read back rather than drawn again, so a run's
  difference interval and its setting interval describe the same resamples.
- `keyed_bootstrap`: the setting bootstrap applied to units whose metric is a key ('metric@step' of the
  cumulative filters, 'te@bucket' of the source duplication), keeping every replicate.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ingest.marts.common import finite
from ingest.marts.propme import Params, setting_bootstrap
from ingest.metrics import bootstrap as bs

INDEPENDENT_SCHEMA = pa.schema([
    ("run_a", pa.string()), ("run_b", pa.string()), ("trace_id", pa.string()), ("metric", pa.string()),
    ("n_units_a", pa.int64()), ("n_units_b", pa.int64()), ("value_a", pa.float64()), ("value_b", pa.float64()),
    ("diff", pa.float64()), ("ci_low", pa.float64()), ("ci_high", pa.float64()),
    ("n_skipped_resamples", pa.int64()), ("n_resamples", pa.int64()), ("seed", pa.int64()),
    ("ci_level", pa.float64()),
])


def independent_difference_bootstrap(pairs: pa.Table, setting: pa.Table, params: Params | None) -> pa.Table:
    """`int_independent_difference_bootstrap`: for each pair of `int_unpaired_run_pairs`, round b's difference
    is replicate b of run_a minus replicate b of run_b (`int_setting_bootstrap` rows: run_id, trace_id, metric,
    value, n_units_resampled, replicates), skipped when either side is NaN (a zero denominator)."""
    if params is None or pairs.num_rows == 0 or setting.num_rows == 0:
        return INDEPENDENT_SCHEMA.empty_table()
    reps = setting.column("replicates").combine_chunks()
    cols = setting.select(["run_id", "trace_id", "metric", "value", "n_units_resampled"]).to_pydict()
    runs: dict[tuple[str, str | None], dict[str, tuple[float | None, int, np.ndarray]]] = {}
    for i, (run_id, trace_id, metric) in enumerate(zip(cols["run_id"], cols["trace_id"], cols["metric"])):
        r = reps[i]
        vec = r.values.to_numpy(zero_copy_only=False) if r.is_valid else np.full(params.n_resamples, np.nan)
        runs.setdefault((run_id, trace_id), {})[metric] = (cols["value"][i], cols["n_units_resampled"][i], vec)
    rows = []
    for pair in pairs.select(["run_a", "run_b", "trace_id"]).to_pylist():
        a, b, trace = pair["run_a"], pair["run_b"], pair["trace_id"]
        ra, rb = runs.get((a, trace)), runs.get((b, trace))
        if ra is None or rb is None:
            continue
        for metric in sorted(set(ra) & set(rb)):
            (va, na, rep_a), (vb, nb, rep_b) = ra[metric], rb[metric]
            iv = bs.percentile_interval(rep_a - rep_b, params.ci_level)
            rows.append({"run_a": a, "run_b": b, "trace_id": trace, "metric": metric, "n_units_a": na,
                         "n_units_b": nb, "value_a": finite(va), "value_b": finite(vb),
                         "diff": None if va is None or vb is None else finite(va - vb),
                         "ci_low": finite(iv.low), "ci_high": finite(iv.high), "n_skipped_resamples": iv.n_skipped,
                         "n_resamples": params.n_resamples, "seed": params.seed, "ci_level": params.ci_level})
    return pa.Table.from_pylist(rows, schema=INDEPENDENT_SCHEMA)


def keyed_bootstrap(units: pa.Table, params: Params | None) -> pa.Table:
    """`setting_bootstrap` over units whose metric is a key (`metric@step`, `te@bucket`), every replicate
    kept (the propensity scores of `int_cumulative_filter_propensity` pair them like the PM metrics)."""
    if params is None or units.num_rows == 0:
        return setting_bootstrap(units, None)
    keys = tuple(sorted(pc.unique(units.column("metric")).to_pylist()))  # not a Python str per row (4.8M at 16x)
    return setting_bootstrap(units, Params(params.n_resamples, params.seed, params.ci_level, keys))


def with_all_metrics(params: Params | None, setting: pa.Table) -> Params | None:
    """`params` whose PM metrics are every metric key of `setting` (for `propensity_bootstrap`)."""
    if params is None:
        return None
    return Params(params.n_resamples, params.seed, params.ci_level,
                  tuple(sorted(set(setting.column("metric").to_pylist()))))
