"""`fct_mia_benchmark`: per corpus, model, scoring convention, score and domain, the numbers mimir reports.

One row per domain of the labelled candidates and one for all of them pooled (domain 'all'): members,
non-members and ambiguous candidates (excluded) counted, AUC with a bootstrap interval, TPR at 1 % and 0.1 %
FPR (definitions in `ingest.mia_benchmark.metrics`). The bootstrap's replicates, seed and level are written
into every row.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

import pyarrow as pa

from ingest.marts.common import arrow_of
from ingest.mia_benchmark.metrics import CI_LEVEL, N_BOOT, SEED, benchmark

ALL = "all"  # the pooled row's domain

SCHEMA = pa.schema([
    ("corpus", pa.string()), ("model", pa.string()), ("scoring", pa.string()), ("score_name", pa.string()),
    ("domain", pa.string()), ("n_members", pa.int64()), ("n_non_members", pa.int64()),
    ("n_ambiguous", pa.int64()), ("auc", pa.float64()), ("auc_low", pa.float64()), ("auc_high", pa.float64()),
    ("tpr_at_1pct_fpr", pa.float64()), ("tpr_at_01pct_fpr", pa.float64()), ("n_boot", pa.int64()),
    ("seed", pa.int64()), ("ci_level", pa.float64()),
])


def params_of(params: Any) -> tuple[int, int, float]:
    """(replicates, seed, level) from int_mia_benchmark_params' one row (the library defaults without one)."""
    rows = arrow_of(params).to_pylist()
    if not rows:
        return N_BOOT, SEED, CI_LEVEL
    r = rows[0]
    return int(r["bootstrap_resamples"]), int(r["bootstrap_seed"]), float(r["ci_level"])


def benchmark_table(scores: Any, labels: Any, n_boot: int = N_BOOT, seed: int = SEED,
                    ci_level: float = CI_LEVEL) -> pa.Table:
    """`scores`: int_mia_benchmark_scores; `labels`: stg_mia_labels (for the ambiguous counts)."""
    s = arrow_of(scores).select(["corpus", "model", "scoring", "score_name", "domain", "label",
                                 "member_score"]).to_pylist()
    ambiguous: Counter = Counter()
    for r in arrow_of(labels).select(["corpus", "domain", "label"]).to_pylist():
        if r["label"] == "ambiguous":
            ambiguous[(r["corpus"], r["domain"])] += 1
            ambiguous[(r["corpus"], ALL)] += 1
    groups: dict[tuple, dict[str, list[float]]] = defaultdict(lambda: {"member": [], "non_member": []})
    for r in s:
        key = (r["corpus"], r["model"], r["scoring"], r["score_name"])
        for d in (r["domain"], ALL):
            groups[key + (d,)][r["label"]].append(r["member_score"])
    rows = []
    for (corpus, model, scoring, score_name, domain), g in sorted(groups.items()):
        b = benchmark(g["member"], g["non_member"], n_boot, seed, ci_level)
        rows.append({"corpus": corpus, "model": model, "scoring": scoring, "score_name": score_name,
                     "domain": domain, "n_members": b.n_members, "n_non_members": b.n_non_members,
                     "n_ambiguous": ambiguous[(corpus, domain)], "auc": b.auc, "auc_low": b.auc_low,
                     "auc_high": b.auc_high, "tpr_at_1pct_fpr": b.tpr_at_1pct_fpr,
                     "tpr_at_01pct_fpr": b.tpr_at_01pct_fpr, "n_boot": n_boot, "seed": seed, "ci_level": ci_level})
    return pa.Table.from_pylist(rows, schema=SCHEMA)
