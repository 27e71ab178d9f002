"""The bootstrap's draws are numpy's default int64 draws (what scipy.stats.bootstrap makes), whatever dtype and
chunk size `resample_counts` uses to make them faster. Oracle: `rng.integers(0, n, size=(B, n))` in one call."""

from __future__ import annotations

import numpy as np
import pytest

from ingest.metrics import bootstrap as bs


@pytest.mark.parametrize("n", [1, 2, 3, 255, 256, 10_000, 65_537, 2**24 + 3, 2**31 - 1])
def test_int32_draws_are_the_int64_draws(n: int) -> None:
    want = np.random.default_rng([5, 11]).integers(0, n, size=(7, 301))
    rng = np.random.default_rng([5, 11])
    got = np.vstack([rng.integers(0, n, size=(3, 301), dtype=np.int32), rng.integers(0, n, size=(4, 301))])
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("n_units", [1, 9, 12_000])  # 12,000 units: chunks of 213 resamples
def test_default_chunks_give_the_one_call_draws(n_units: int) -> None:
    B = 500
    want = np.random.default_rng([3, bs.stream_key("setting", "r", "")]).integers(0, n_units, size=(B, n_units))
    got = np.vstack([c for _, c in bs.resample_counts(n_units, B, bs.stream_rng(3, "setting", "r", ""))])
    assert got.shape == (B, n_units)
    for r in (0, 1, 212, 213, B - 1):
        np.testing.assert_array_equal(got[r], np.bincount(want[r], minlength=n_units))
