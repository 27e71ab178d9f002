"""The model's benchmark score on clean vs contaminated items, with percentile-bootstrap intervals.

Behind the dbt model fct_contamination_scores. Each replicate resamples the clean and the contaminated items
independently (with replacement, each group keeping its size), so the interval of the gap reflects both
groups' sampling noise; `resamples` replicates from one numpy generator seeded with `seed` and the benchmark
name (the same benchmark gives the same interval in every warehouse). A group with no scored item gives NULL
means and intervals; a group of one item gives its score and an interval of zero width.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ScoreGap:
    n_a: int
    n_b: int
    mean_a: float | None
    mean_b: float | None
    gap: float | None              # mean_b - mean_a
    mean_a_lower: float | None
    mean_a_upper: float | None
    mean_b_lower: float | None
    mean_b_upper: float | None
    gap_lower: float | None
    gap_upper: float | None


def seed_for(seed: int, key: str) -> int:
    return int.from_bytes(hashlib.blake2b(f"{seed}\x1f{key}".encode(), digest_size=8).digest(), "little")


def score_gap(a: Sequence[float], b: Sequence[float], resamples: int, seed: int, level: float) -> ScoreGap:
    """Means of groups a and b, b - a, and their percentile intervals at `level` from `resamples` replicates."""
    xa, xb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    ma = float(xa.mean()) if len(xa) else None
    mb = float(xb.mean()) if len(xb) else None
    gap = None if ma is None or mb is None else mb - ma
    rng = np.random.default_rng(seed)
    q = [(1 - level) / 2 * 100, (1 + level) / 2 * 100]

    def boot(x: np.ndarray) -> np.ndarray | None:
        if not len(x):
            return None
        return x[rng.integers(0, len(x), size=(resamples, len(x)))].mean(axis=1)

    ba, bb = boot(xa), boot(xb)
    ia = (None, None) if ba is None else tuple(float(v) for v in np.percentile(ba, q))
    ib = (None, None) if bb is None else tuple(float(v) for v in np.percentile(bb, q))
    ig = (None, None) if ba is None or bb is None else tuple(float(v) for v in np.percentile(bb - ba, q))
    return ScoreGap(len(xa), len(xb), ma, mb, gap, *ia, *ib, *ig)


def scores_table(items, params):
    """fct_contamination_scores from fct_contamination_items and int_contamination_params (Arrow in, Arrow out):
    one row per (benchmark, trace_id) with scored items; clean vs contaminated, and clean vs not clean."""
    import pyarrow as pa

    from ingest.lake import make_key
    from ingest.marts.common import arrow_of

    p = arrow_of(params).to_pylist()[0]
    # sorted: DuckDB gives the model's rows in no fixed order, and the same seeded resample indices must pick
    # the same items on every build
    rows = sorted((r for r in arrow_of(items).select(["benchmark", "trace_id", "item_id", "status", "score"]).to_pylist()
                   if r["score"] is not None), key=lambda r: (r["benchmark"], r["trace_id"], r["item_id"]))
    groups: dict[tuple[str, str], dict[str, list[float]]] = {}
    for r in rows:
        groups.setdefault((r["benchmark"], r["trace_id"]), {"clean": [], "partly": [], "contaminated": []})[
            r["status"]].append(r["score"])
    out = []
    for (bench, trace), g in sorted(groups.items()):
        s = seed_for(int(p["bootstrap_seed"]), f"{bench}\x1f{trace}")
        strict = score_gap(g["clean"], g["contaminated"], int(p["bootstrap_resamples"]), s, float(p["ci_level"]))
        loose = score_gap(g["clean"], g["partly"] + g["contaminated"], int(p["bootstrap_resamples"]), s + 1,
                          float(p["ci_level"]))
        out.append({
            "score_row_id": make_key(bench, trace), "benchmark": bench, "trace_id": trace, "n_scored": sum(map(len, g.values())),
            "n_clean": strict.n_a, "n_partly": len(g["partly"]), "n_contaminated": strict.n_b,
            "score_clean": strict.mean_a, "score_clean_lower": strict.mean_a_lower,
            "score_clean_upper": strict.mean_a_upper,
            "score_contaminated": strict.mean_b, "score_contaminated_lower": strict.mean_b_lower,
            "score_contaminated_upper": strict.mean_b_upper,
            "gap": strict.gap, "gap_lower": strict.gap_lower, "gap_upper": strict.gap_upper,
            "score_not_clean": loose.mean_b, "gap_not_clean": loose.gap, "gap_not_clean_lower": loose.gap_lower,
            "gap_not_clean_upper": loose.gap_upper,
            "n_boot": int(p["bootstrap_resamples"]), "ci_level": float(p["ci_level"]), "params": p["params"],
        })
    schema = pa.schema([("score_row_id", pa.string()), ("benchmark", pa.string()), ("trace_id", pa.string()), ("n_scored", pa.int64()),
                        ("n_clean", pa.int64()), ("n_partly", pa.int64()), ("n_contaminated", pa.int64())]
                       + [(c, pa.float64()) for c in ("score_clean", "score_clean_lower", "score_clean_upper",
                                                      "score_contaminated", "score_contaminated_lower",
                                                      "score_contaminated_upper", "gap", "gap_lower", "gap_upper",
                                                      "score_not_clean", "gap_not_clean", "gap_not_clean_lower",
                                                      "gap_not_clean_upper")]
                       + [("n_boot", pa.int64()), ("ci_level", pa.float64()), ("params", pa.string())])
    return pa.Table.from_pylist(out, schema=schema)
