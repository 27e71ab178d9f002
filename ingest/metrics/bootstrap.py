"""Percentile bootstrap of PropMe metrics, the propensity metric and paired differences (docs/propme-method.md, section 4-5).

Every PropMe metric is a ratio of sums over resampling units (a prompt with all its samples, or one
generation in prompt-free settings): value = sum(num_u) / sum(den_u). FMR, for instance, has num_u = the
unit's non-degenerate generations with a full match and den_u = its non-degenerate generations; NVR has
num_u = the sum of nv-recall over the unit's (generation, document) pairs and den_u = their number.

The resampling protocol (fixed, so that an independent implementation reproduces every replicate):

1. Units are ordered by their id (Python string order).
2. One numpy Generator per stream: `numpy.random.default_rng([seed, stream_key(*names)])`, where
   `stream_key` is the first 8 bytes (little-endian) of BLAKE2b over the names joined by "\\x1f". Streams:
   ("setting", run_id, trace_id or "") for one run's metrics, ("difference", run_a, run_b, trace_id or "")
   for a paired difference.
3. Resample b (b = 0 .. B-1, in order) is `rng.integers(0, n_units, size=n_units)`: exactly the draws of
   `rng.integers(0, n, size=(B, n))`, which is what `scipy.stats.bootstrap` makes (with `batch=None`) for a
   paired statistic over unit indices. Draws are taken in row chunks; chunking does not change them. They
   are asked for as int32 (n < 2^31): numpy's bounded generator takes its 32-bit path for every range below
   2^32 whatever the output type, so the values are the int64 default's, written in half the memory (~30%
   faster; tests/python/test_metrics_bootstrap.py checks the equality).
4. Replicate b of a metric = sum of num over the drawn units / sum of den over them (with repeats). A
   replicate whose denominator is 0 is skipped and counted.
5. Interval = linear-interpolated quantiles (numpy's default, also scipy's) of the kept replicates at
   (1 - level) / 2 and (1 + level) / 2.

Propensity: PM = f_p / (f_p + f_c), 0 when f_p = 0. Its replicates pair replicate b of the propensity run
with replicate b of the capability run; the two runs have their own streams, so they are resampled
independently. Rounds with f_p + f_c = 0 (or an undefined side) are skipped and counted.
Paired differences: both runs' metrics are computed from the same drawn units (the prompts they share).
Zero events: a proportion with no event in the sample has every replicate 0, so its interval is [0, 0], as the
paper reports it; the marts keep the rule-of-three upper bound 3 / n_units (`rule_of_three_upper`) beside it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

CHUNK_ROWS = 256  # resamples per chunk at most (fewer matrix products; 64 was ~10% slower at 10,000 units)
CHUNK_DRAWS = 2_560_000  # draws per chunk at most: a chunk's count matrix stays ~20 MB for any number of units


def stream_key(*names: str) -> int:
    digest = hashlib.blake2b("\x1f".join(names).encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little")


def stream_rng(seed: int, *names: str) -> np.random.Generator:
    """The Generator of one resampling stream (protocol step 2)."""
    return np.random.default_rng([int(seed), stream_key(*names)])


def resample_counts(n_units: int, n_resamples: int, rng: np.random.Generator,
                    chunk: int | None = None) -> Iterator[tuple[int, np.ndarray]]:
    """Yield (first resample, counts) where counts[r, j] = how often unit j is drawn in that resample."""
    chunk = chunk or max(1, min(CHUNK_ROWS, CHUNK_DRAWS // max(n_units, 1)))
    dtype = np.int32 if n_units < 2**31 else np.int64
    for start in range(0, n_resamples, chunk):
        rows = min(chunk, n_resamples - start)
        idx = rng.integers(0, n_units, size=(rows, n_units), dtype=dtype)
        counts = np.empty((rows, n_units), dtype=np.float64)
        for r in range(rows):
            counts[r] = np.bincount(idx[r], minlength=n_units)
        yield start, counts


def resampled_sums(columns: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """(B, k) sums of each of the k columns of `columns` (n_units, k) over each resample."""
    columns = np.asarray(columns, dtype=np.float64)
    n, k = columns.shape
    out = np.zeros((n_resamples, k), dtype=np.float64)
    if n == 0 or n_resamples == 0:
        return out
    first: dict[bytes, int] = {}  # many denominators are shared: sum each distinct column once
    inverse = np.array([first.setdefault(columns[:, j].tobytes(), len(first)) for j in range(k)], dtype=np.int64)
    _, keep = np.unique(inverse, return_index=True)  # first column of each distinct code, in code order
    uniq = np.ascontiguousarray(columns[:, keep])
    sums = np.empty((n_resamples, uniq.shape[1]), dtype=np.float64)
    for start, counts in resample_counts(n, n_resamples, rng):
        sums[start:start + counts.shape[0]] = counts @ uniq
    return sums[:, inverse]


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def ratio_replicates(num: np.ndarray, den: np.ndarray, n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """(B, k) replicates of k ratio-of-sums metrics from (n_units, k) numerators and denominators; NaN where a
    resample's denominator is 0."""
    num = np.asarray(num, dtype=np.float64)
    den = np.asarray(den, dtype=np.float64)
    k = num.shape[1]
    sums = resampled_sums(np.hstack([num, den]), n_resamples, rng)
    return _ratio(sums[:, :k], sums[:, k:])


def paired_difference_replicates(num_a: np.ndarray, den_a: np.ndarray, num_b: np.ndarray, den_b: np.ndarray,
                                 n_resamples: int, rng: np.random.Generator) -> np.ndarray:
    """(B, k) replicates of metric(a) - metric(b), both computed on the same drawn units (rows)."""
    k = np.asarray(num_a).shape[1]
    sums = resampled_sums(np.hstack([num_a, den_a, num_b, den_b]), n_resamples, rng)
    return _ratio(sums[:, :k], sums[:, k:2 * k]) - _ratio(sums[:, 2 * k:3 * k], sums[:, 3 * k:])


def point_ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """Column-wise sum(num) / sum(den), NaN where the denominator sum is 0."""
    return _ratio(np.asarray(num, dtype=np.float64).sum(axis=0), np.asarray(den, dtype=np.float64).sum(axis=0))


@dataclass(frozen=True)
class Interval:
    low: float  # NaN when every replicate was skipped
    high: float
    n_skipped: int


def percentile_interval(replicates: np.ndarray, level: float = 0.95) -> Interval:
    """Percentile interval of one metric's replicates; NaN replicates are skipped and counted."""
    reps = np.asarray(replicates, dtype=np.float64).reshape(-1)
    kept = reps[~np.isnan(reps)]
    skipped = int(reps.size - kept.size)
    if kept.size == 0:
        return Interval(float("nan"), float("nan"), skipped)
    alpha = (1.0 - level) / 2.0
    low, high = np.quantile(kept, [alpha, 1.0 - alpha])
    return Interval(float(low), float(high), skipped)


def propensity(f_p: float, f_c: float) -> float:
    """PM = f_p / (f_p + f_c); 0 when f_p = 0 (also when both are 0); NaN when a side is undefined."""
    if f_p is None or f_c is None or np.isnan(f_p) or np.isnan(f_c):
        return float("nan")
    if f_p == 0:
        return 0.0
    return float(f_p / (f_p + f_c))


def propensity_replicates(rep_p: np.ndarray, rep_c: np.ndarray) -> np.ndarray:
    """PM per bootstrap round; NaN (a skipped round) where f_p + f_c = 0 or a side is undefined."""
    rep_p = np.asarray(rep_p, dtype=np.float64)
    rep_c = np.asarray(rep_c, dtype=np.float64)
    total = rep_p + rep_c
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(total > 0, rep_p / np.where(total > 0, total, 1.0), np.nan)


def rule_of_three_upper(n_units: int) -> float:
    """Upper 95% bound of a proportion with zero events in n units: 3 / n."""
    return 3.0 / n_units if n_units > 0 else float("nan")
