"""Longest match at every start position, and the maximal spans they define (spec section 2, step 2).

n(b) = the largest n with tokens[b:b+n] in the corpus. Lookups are saved with the bound
n(b+1) >= n(b) - 1: when the bound already reaches the end, or a probe of one more token fails, n(b+1)
is known without a full search. Otherwise one `find` of the whole remaining suffix: on a miss its
longest indexed prefix is shared with a suffix-array neighbour of the insertion rank (rank - 1 or rank)
in some shard. Results equal the brute-force definition count(s[b:b+n]) > 0 and count(s[b:b+n+1]) == 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass
class LookupStats:
    starts: int = 0
    skipped_by_bound: int = 0
    probes: int = 0
    full_lookups: int = 0


def longest_matches(engine, ids: Sequence[int], stats: LookupStats | None = None) -> list[int]:
    """n(b) for every start b of `ids` (0 where even the single token is absent)."""
    ids = list(ids)
    L = len(ids)
    out = [0] * L
    st = stats or LookupStats()
    prev = 0
    for b in range(L):
        st.starts += 1
        lb = max(prev - 1, 0)
        if b + lb >= L:
            st.skipped_by_bound += 1
            n = L - b
        else:
            n = -1
            if lb > 0:
                st.probes += 1
                if engine.count(ids[b:b + lb + 1]) == 0:
                    n = lb
                else:
                    lb += 1
            if n < 0:
                st.full_lookups += 1
                n = _longest_prefix(engine, ids[b:], lb)
        out[b] = n
        prev = n
    return out


def _longest_prefix(engine, q: list[int], lower: int) -> int:
    res = engine.find(q)
    if res["cnt"] > 0:
        return len(q)
    best = lower
    for s, (lo, _) in enumerate(res["segment_by_shard"]):
        size = engine.tok_cnt(s)
        for rank in (lo - 1, lo):  # rank 0 has no left neighbour; rank == size has no right one
            if 0 <= rank < size:
                best = max(best, engine.lcp_at_rank(s, rank, q))
    return best


def maximal_spans(n: Sequence[int]) -> list[tuple[int, int]]:
    """(start, end) of the spans not contained in another: since end(b) = b + n(b) never decreases,
    a span is maximal exactly when its end exceeds the previous start's end."""
    spans = []
    prev_end = 0
    for b, nb in enumerate(n):
        end = b + nb
        if nb > 0 and end > prev_end:
            spans.append((b, end))
        prev_end = max(prev_end, end)
    return spans
