"""Similarity selection: keep, per source, the candidates closest to the training data.

A longer sentence shares more words with some training document, so raw nearest-document similarity favours
length. The score is therefore the similarity minus the mean similarity of candidates with the same length
(in index tokens). Every source gets an equal share of the `n` prompts; a source with fewer candidates gives
all of them, and what it leaves goes to the sources that still have candidates, again in equal shares.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np


def length_adjusted(similarity: np.ndarray, lengths: list[int]) -> np.ndarray:
    """similarity - mean similarity of the candidates of the same length."""
    by_len: dict[int, list[int]] = defaultdict(list)
    for i, n in enumerate(lengths):
        by_len[n].append(i)
    out = np.empty(len(lengths))
    for idx in by_len.values():
        out[idx] = similarity[idx] - similarity[idx].mean()
    return out


def equal_shares(available: dict[str, int], n: int) -> dict[str, int]:
    """How many items each source gives: equal shares of n, a short source's unused share spread over the
    others (the remainder of an uneven split goes to sources in name order)."""
    quota = {s: 0 for s in available}
    left = min(n, sum(available.values()))
    open_ = sorted(s for s, a in available.items() if a > 0)
    while left > 0 and open_:
        share, extra = divmod(left, len(open_))
        still = []
        for i, s in enumerate(open_):
            want = share + (1 if i < extra else 0)
            take = min(want, available[s] - quota[s])
            quota[s] += take
            left -= take
            if quota[s] < available[s]:
                still.append(s)
        open_ = still
    return quota


def select(sources: list[str], scores: np.ndarray, n: int) -> list[int]:
    """Indices of the chosen candidates: per source its `equal_shares` quota of the highest scores (ties
    broken by position, so the choice is deterministic)."""
    by_source: dict[str, list[int]] = defaultdict(list)
    for i, s in enumerate(sources):
        by_source[s].append(i)
    quota = equal_shares({s: len(ix) for s, ix in by_source.items()}, n)
    chosen: list[int] = []
    for s in sorted(by_source):
        ix = sorted(by_source[s], key=lambda i: (-scores[i], i))
        chosen.extend(ix[:quota[s]])
    return sorted(chosen)
