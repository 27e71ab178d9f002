"""Python behind the dbt models of PropMe's further analyses (docs/propme-analyses.md).

- `independent_difference_bootstrap`: metric(run_a) - metric(run_b) for runs that share no prompts (the
  prompt-free settings), each run resampled on its own. Each run's replicates come from the same stream as
  its own interval in `int_setting_bootstrap` (key "setting", run, trace), so a run's difference interval
  and its setting interval describe the same resamples.
- `keyed_bootstrap`: the setting bootstrap applied to units whose metric is a key ('metric@step' of the
  cumulative filters, 'te@bucket' of the source duplication), keeping every replicate.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ingest.marts.common import finite, parallel
from ingest.marts.propme import Params, setting_bootstrap, unit_matrices
from ingest.metrics import bootstrap as bs

INDEPENDENT_SCHEMA = pa.schema([
    ("run_a", pa.string()), ("run_b", pa.string()), ("trace_id", pa.string()), ("metric", pa.string()),
    ("n_units_a", pa.int64()), ("n_units_b", pa.int64()), ("value_a", pa.float64()), ("value_b", pa.float64()),
    ("diff", pa.float64()), ("ci_low", pa.float64()), ("ci_high", pa.float64()),
    ("n_skipped_resamples", pa.int64()), ("n_resamples", pa.int64()), ("seed", pa.int64()),
    ("ci_level", pa.float64()),
])


def independent_difference_bootstrap(pairs: pa.Table, units: pa.Table, params: Params | None) -> pa.Table:
    """`int_independent_difference_bootstrap`: for each pair of `int_unpaired_run_pairs`, both runs are
    resampled independently (their own units, their own stream); a round's difference is the difference of
    the two runs' replicates, skipped when either denominator is 0."""
    if params is None or pairs.num_rows == 0 or units.num_rows == 0:
        return INDEPENDENT_SCHEMA.empty_table()
    groups = unit_matrices(units)
    cache: dict[tuple[str, str | None], tuple[np.ndarray, np.ndarray]] = {}

    def replicates(run_id: str, trace_id: str | None) -> tuple[np.ndarray, np.ndarray] | None:
        key = (run_id, trace_id)
        m = groups.get(key)
        if m is None:
            return None
        if key not in cache:
            rng = bs.stream_rng(params.seed, "setting", run_id, trace_id or "")
            cache[key] = (bs.ratio_replicates(m.num, m.den, params.n_resamples, rng), bs.point_ratio(m.num, m.den))
        return cache[key]

    pair_rows = pairs.select(["run_a", "run_b", "trace_id"]).to_pylist()
    for p in pair_rows:  # fill the cache serially; the pairs below only read it
        replicates(p["run_a"], p["trace_id"])
        replicates(p["run_b"], p["trace_id"])

    def one(pair) -> list[dict]:
        a, b, trace = pair["run_a"], pair["run_b"], pair["trace_id"]
        ra, rb = replicates(a, trace), replicates(b, trace)
        if ra is None or rb is None:
            return []
        ma, mb = groups[(a, trace)], groups[(b, trace)]
        rows = []
        for metric in sorted(set(ma.metrics) & set(mb.metrics)):
            ja, jb = ma.metrics.index(metric), mb.metrics.index(metric)
            iv = bs.percentile_interval(ra[0][:, ja] - rb[0][:, jb], params.ci_level)
            va, vb = ra[1][ja], rb[1][jb]
            rows.append({"run_a": a, "run_b": b, "trace_id": trace, "metric": metric,
                         "n_units_a": int(ma.num.shape[0]), "n_units_b": int(mb.num.shape[0]),
                         "value_a": finite(va), "value_b": finite(vb), "diff": finite(va - vb),
                         "ci_low": finite(iv.low), "ci_high": finite(iv.high), "n_skipped_resamples": iv.n_skipped,
                         "n_resamples": params.n_resamples, "seed": params.seed, "ci_level": params.ci_level})
        return rows

    rows = [r for rs in parallel(one, pair_rows) for r in rs]
    return pa.Table.from_pylist(rows, schema=INDEPENDENT_SCHEMA)


def keyed_bootstrap(units: pa.Table, params: Params | None) -> pa.Table:
    """`setting_bootstrap` over units whose metric is a key (`metric@step`, `te@bucket`), every replicate
    kept (the propensity scores of `int_cumulative_filter_propensity` pair them like the PM metrics)."""
    if params is None or units.num_rows == 0:
        return setting_bootstrap(units, None)
    keys = tuple(sorted(set(units.column("metric").to_pylist())))
    return setting_bootstrap(units, Params(params.n_resamples, params.seed, params.ci_level, keys))


def with_all_metrics(params: Params | None, setting: pa.Table) -> Params | None:
    """`params` whose PM metrics are every metric key of `setting` (for `propensity_bootstrap`)."""
    if params is None:
        return None
    return Params(params.n_resamples, params.seed, params.ci_level,
                  tuple(sorted(set(setting.column("metric").to_pylist()))))
