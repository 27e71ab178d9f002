"""Longest match at every start position, and the maximal spans they define (docs/propme-method.md, section 2, step 2).

n(b) = the largest n with tokens[b:b+n] in the corpus; end(b) = b + n(b). Since n(b+1) >= n(b) - 1, end never
decreases. A full lookup at b is one `find` of the whole remaining suffix: on a miss its longest indexed
prefix is shared with a suffix-array neighbour of the insertion rank (rank - 1 or rank) in some shard.

Lookups are saved with the bound: after a full lookup at b with end m = end(b), every later start k < m has
end(k) >= m, and end(k) > m exactly when tokens[k:m+1] occurs. That predicate is monotone in k (a suffix of
an occurring string occurs), so instead of probing k = b+1, b+2, ... one by one, the first k where it holds
is found by galloping back from m (probes at m-1, m-2, m-4, ...) and bisecting: every start before it gets
n(k) = m - k without a lookup of its own, and it gets a full lookup with the lower bound m - k + 1. When a
bound reaches the end of the text no lookup is needed at all. Results equal the brute-force definition
count(s[b:b+n]) > 0 and count(s[b:b+n+1]) == 0.

With an `IndexEngine` the whole loop below runs compiled in one call (`longest_matches_bytes`, numba, GIL
released, same steps); without numba, on its byte-level binary searches (`occurs_bytes`,
`longest_prefix_bytes`: no engine threads, the query converted once); any other engine with `count`, `find`,
`tok_cnt` and `lcp_at_rank` works through those.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass
class LookupStats:
    starts: int = 0
    skipped_by_bound: int = 0  # starts whose n(b) followed from a bound, without a full lookup of their own
    probes: int = 0            # "does tokens[k:m+1] occur" lookups
    full_lookups: int = 0


def _lookups(engine, ids: list[int], hints: dict | None) -> tuple[Callable[[int, int], bool], Callable[[int], int]]:
    """(occurs(b, e): tokens[b:e] occurs, longest(b): n(b)) for one token sequence."""
    if hasattr(engine, "ids_bytes") and hasattr(engine, "occurs_bytes"):
        qb = engine.ids_bytes(ids)
        w = engine.width

        def longest(b: int) -> int:
            if hints is None:
                return engine.longest_prefix_bytes(qb[b * w:])
            h: list = []
            n = engine.longest_prefix_bytes(qb[b * w:], h)
            hints[b] = h
            return n

        return lambda b, e: engine.occurs_bytes(qb[b * w:e * w]), longest
    return (lambda b, e: engine.count(ids[b:e]) > 0,
            lambda b: _longest_prefix(engine, ids[b:]))


def longest_matches(engine, ids: Sequence[int], stats: LookupStats | None = None,
                    hints: dict[int, list[int | None]] | None = None, plan: Any = None) -> list[int]:
    """n(b) for every start b of `ids` (0 where even the single token is absent).

    `hints` (a dict, byte-level engines only) receives, for every start that had a full lookup, the
    per-shard insertion ranks of tokens[b:]: `find_bytes(..., hints[b])` then counts any tokens[b:e] in a
    few steps. `plan` (an `IndexEngine.plan_bytes` of `ids`) receives them too, for `find_many_bytes`."""
    ids = list(ids)
    L = len(ids)
    out = [0] * L
    st = stats or LookupStats()
    if not L:
        return out
    if all(hasattr(engine, a) for a in ("ids_bytes", "occurs_bytes", "longest_matches_bytes")):
        qb = bytes(plan.q) if plan is not None else engine.ids_bytes(ids)
        # compiled, one call; None if unavailable
        if plan is None:
            done = engine.longest_matches_bytes(qb)
        else:  # the plan receives the insertion ranks; the dict only when the caller asks for it
            done = engine.longest_matches_bytes(qb, plan=plan, want_hints=hints is not None)
        if done is not None:
            out, (starts, skipped, probes, full), found = done
            st.starts += starts
            st.skipped_by_bound += skipped
            st.probes += probes
            st.full_lookups += full
            if hints is not None:
                hints.update(found)
            return out
    occurs, longest = _lookups(engine, ids, hints)
    b, lb = 0, 0  # lb: a lower bound of n(b)
    while b < L:
        if b + lb >= L:  # the bound reaches the end: n(k) = L - k from here on
            for k in range(b, L):
                out[k] = L - k
            st.starts += L - b
            st.skipped_by_bound += L - b
            break
        st.starts += 1
        st.full_lookups += 1
        n = max(lb, longest(b))
        out[b] = n
        m = b + n  # end(b); tokens[b:m+1] does not occur
        if m >= L or n == 0:
            lb = max(n - 1, 0)
            b += 1
            continue
        # first k in (b, m) with tokens[k:m+1] occurring (m if none): gallop back from m, then bisect
        lo, hi, step = b + 1, m, 1
        while True:
            k = m - step
            if k <= b:
                break
            st.probes += 1
            if occurs(k, m + 1):
                hi = k
                step *= 2
            else:
                lo = k + 1
                break
        while lo < hi:
            mid = (lo + hi) // 2
            st.probes += 1
            if occurs(mid, m + 1):
                hi = mid
            else:
                lo = mid + 1
        for k in range(b + 1, hi):  # these end exactly at m
            out[k] = m - k
        st.starts += hi - b - 1
        st.skipped_by_bound += hi - b - 1
        lb = m - hi + 1 if hi < m else 0
        b = hi
    return out


def _longest_prefix(engine, q: list[int]) -> int:
    res = engine.find(q)
    if res["cnt"] > 0:
        return len(q)
    best = 0
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
        if end > prev_end:
            if nb > 0:
                spans.append((b, end))
            prev_end = end
    return spans
