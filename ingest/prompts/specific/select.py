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
    """How many items each source gives: the most equal split of min(n, total) with no source giving more
    than it has (water filling: every source gets min(available, L) for the largest level L that fits, and
    the few left over go one each to the sources that still have more, in name order)."""
    n = min(n, sum(available.values()))

    def filled(level: int) -> int:
        return sum(min(a, level) for a in available.values())

    lo, hi = 0, max(available.values(), default=0)
    while lo < hi:  # the largest level whose fill does not exceed n
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if filled(mid) <= n else (lo, mid - 1)
    quota = {s: min(a, lo) for s, a in available.items()}
    left = n - sum(quota.values())
    for s in sorted(available):
        if left == 0:
            break
        if available[s] > lo:
            quota[s] += 1
            left -= 1
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
