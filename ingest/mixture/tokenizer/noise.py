"""How sure is each merge constraint? Its bootstrap standard error, for the noise-weighted LP.

A merge constraint compares two pair counts of the reference text at one merge step: (c(p) - c(m_t)) . alpha.
Late merges are near-ties in the training text, and a reference sample smaller than the training text moves
counts by more than those margins, so many constraints have a sign decided by which documents happened to be
sampled. Dividing each constraint by the standard error of its left-hand side makes a violation cost its size
in standard errors: a constraint whose sign is noise (|difference| ~ 1 SE) can be violated cheaply, one the
reference text is sure of cannot.

The standard error is the spread of (c_b(p) - c_b(m_t)) . alpha0 over B bootstrap replicates b of the
reference documents (resampled within each domain, as the interval's bootstrap does), at a fixed alpha0 (the
LP stays linear). One replay over the B columns F_b @ alpha0 (a words x B table) gives every pair's replicate
counts at every step in one pass, in step with the point counts (`CountReplay.violations`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ingest.mixture.tokenizer.counting import MergeLog
from ingest.mixture.tokenizer.solve import CountReplay

FLOOR_REL = 1e-3  # an SE below this share of the step's top count is raised to it (pairs in every document alike)


@dataclass
class NoiseScale:
    """Replicate counts of every pair at every step (B columns) and a floor per step (see the module)."""

    replay: CountReplay
    floor: np.ndarray  # (n_steps + 1,)
    weights: np.ndarray  # (B,): the replay's `states` needs a weight vector; its sum is not used

    def se(self, Cn: np.ndarray, idx: np.ndarray, m: int, t: int) -> np.ndarray:
        """Bootstrap SE of (count of pair idx - count of merge m) at step t, at alpha0, floored."""
        if idx.size == 0:
            return np.zeros(0)
        D = Cn[idx] - (Cn[m] if m >= 0 else 0.0)
        return np.maximum(D.std(axis=1, ddof=1), self.floor[t])


def noise_scale(log: MergeLog, replicate_freqs: list[np.ndarray], alpha0: np.ndarray) -> NoiseScale:
    """The `NoiseScale` of B >= 2 bootstrap replicates' frequency tables (words x domains, per million bytes)."""
    if len(replicate_freqs) < 2:
        raise ValueError("the noise scale needs at least 2 bootstrap replicates")
    cols = np.column_stack([F @ alpha0 for F in replicate_freqs])
    replay = CountReplay(log, cols)
    B = cols.shape[1]
    weights = np.full(B, 1.0 / B)
    floor = np.zeros(log.n_steps + 1)
    for t, _, w in replay.states(weights):
        floor[t] = FLOOR_REL * max(float(w.max()) if w.size else 0.0, 1e-9)
    return NoiseScale(replay=replay, floor=floor, weights=weights)
