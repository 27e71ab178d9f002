"""Python behind `int_prompt_closeness_bootstrap`: how close each prompt group is to the training data.

For each prompt set and item group (generic, candidate, specific, training_sentence) the mean of the items'
nearest-training-document similarities with a percentile bootstrap interval, and the group's mean minus the
generic group's mean with an independent bootstrap interval (the groups share no items, so each is resampled
on its own). The protocol is the PropMe one (ingest/metrics/bootstrap.py): items ordered by closeness_id,
one stream per (prompt set, group) keyed ("closeness", prompt_set, group), replicate i of a difference =
replicate i of the group minus replicate i of generic.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ingest.marts.propme import Params
from ingest.metrics import bootstrap as bs

SCHEMA = pa.schema([
    ("prompt_set", pa.string()), ("item_group", pa.string()), ("n_items", pa.int64()),
    ("mean_similarity", pa.float64()), ("ci_low", pa.float64()), ("ci_high", pa.float64()),
    ("diff_vs_generic", pa.float64()), ("diff_ci_low", pa.float64()), ("diff_ci_high", pa.float64()),
    ("n_resamples", pa.int64()), ("seed", pa.int64()), ("ci_level", pa.float64()),
])


def _replicates(values: np.ndarray, params: Params, prompt_set: str, group: str) -> np.ndarray:
    rng = bs.stream_rng(params.seed, "closeness", prompt_set, group)
    ones = np.ones((values.size, 1))
    return bs.ratio_replicates(values.reshape(-1, 1), ones, params.n_resamples, rng)[:, 0]


def closeness_bootstrap(items: pa.Table, params: Params | None) -> pa.Table:
    if params is None or items.num_rows == 0:
        return SCHEMA.empty_table()
    rows = sorted(items.select(["prompt_set", "item_group", "closeness_id", "similarity"]).to_pylist(),
                  key=lambda r: (r["prompt_set"], r["item_group"], r["closeness_id"]))
    groups: dict[tuple[str, str], list[float]] = {}
    for r in rows:
        groups.setdefault((r["prompt_set"], r["item_group"]), []).append(r["similarity"])
    reps = {k: _replicates(np.asarray(v, dtype=np.float64), params, *k) for k, v in groups.items()}
    out = []
    for (pset, group), values in groups.items():
        ci = bs.percentile_interval(reps[(pset, group)], params.ci_level)
        diff = dlow = dhigh = None
        base = (pset, "generic")
        if group != "generic" and base in groups:
            diff = float(np.mean(values) - np.mean(groups[base]))
            dci = bs.percentile_interval(reps[(pset, group)] - reps[base], params.ci_level)
            dlow, dhigh = dci.low, dci.high
        out.append({"prompt_set": pset, "item_group": group, "n_items": len(values),
                    "mean_similarity": float(np.mean(values)), "ci_low": ci.low, "ci_high": ci.high,
                    "diff_vs_generic": diff, "diff_ci_low": dlow, "diff_ci_high": dhigh,
                    "n_resamples": params.n_resamples, "seed": params.seed, "ci_level": params.ci_level})
    return pa.Table.from_pylist(out, schema=SCHEMA)
