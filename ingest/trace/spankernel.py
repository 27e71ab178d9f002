"""Steps 3-4 of a trace compiled (numba, `nogil`): the maximal spans of the longest matches and their scores.

Why: after the longest match at every start (one compiled call), the tracer turned the L match lengths into
maximal spans, kept the long ones and summed each one's unigram log-probabilities in Python, under the GIL:
a loop over every token of the generation and a list slice, `itemgetter` and `sum` per span (~3,200 spans
per 200 traces on the benchmark inputs). Here both are one call each (BENCHMARKS.md, "Threads and the GIL:
rows and keys in one call").

Same answers: `maximal_spans` is `ingest.trace.matching.maximal_spans` followed by the length filter of
token mode (`Tracer._filter`); the spans it gives are already sorted and nested in none, so the sort and
the nesting check that follow in `_filter` change nothing. `span_scores` adds the floats left to right
from 0.0, exactly as CPython 3.11's `sum()` of floats does (plain IEEE double adds); Python 3.12 made
`sum()` compensated, so the tracer uses it only on earlier versions (`SAME_AS_SUM`), where
tests/python/test_trace_rowkernels.py compares both with the Python steps.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from ingest import kernelgate

njit, _LOAD_ERROR = kernelgate.load_numba()
_checked = False

# `span_scores` equals `Tracer._score` (sum() of the floats) only where sum() adds plainly, left to right
SAME_AS_SUM = sys.version_info < (3, 12)


def maximal_spans(n: Any, min_len: int) -> Any:
    """(starts, ends) of the spans not contained in another (`matching.maximal_spans`) that are at least
    `min_len` tokens long; `n` the longest match at every start (int64)."""
    L = n.shape[0]
    b_out = np.empty(L, dtype=np.int64)
    e_out = np.empty(L, dtype=np.int64)
    k = 0
    prev_end = 0
    for b in range(L):
        end = b + n[b]
        if end > prev_end:
            if n[b] > 0 and n[b] >= min_len:
                b_out[k] = b
                e_out[k] = end
                k += 1
            prev_end = end
    return b_out[:k], e_out[:k]


def span_scores(ids: Any, lp: Any, floor: float, starts: Any, ends: Any) -> Any:
    """The sum of lp[t] (floor past the table) over ids[starts[i]:ends[i]], left to right from 0.0."""
    n = lp.shape[0]
    out = np.empty(starts.shape[0], dtype=np.float64)
    for i in range(starts.shape[0]):
        acc = 0.0
        for j in range(starts[i], ends[i]):
            t = ids[j]
            acc += lp[t] if t < n else floor
        out[i] = acc
    return out


def spans_with_scores(n: Any, min_len: int, ids: Any, lp: Any, floor: float) -> Any:
    """`maximal_spans(n, min_len)` and the `span_scores` of each, in one call (one dispatch under the GIL,
    not two): (starts, ends, scores)."""
    bs, es = maximal_spans(n, min_len)
    return bs, es, span_scores(ids, lp, floor, bs, es)


kernelgate.compile_all(globals(), ("maximal_spans", "span_scores", "spans_with_scores"))


def _self_check() -> bool:
    b, e = maximal_spans(np.array([3, 2, 1, 0, 5, 4, 1], dtype=np.int64), 2)
    s = span_scores(np.array([0, 1, 9], dtype=np.int64), np.array([-0.5, -1.25]), -30.0,
                    np.array([0, 1], dtype=np.int64), np.array([3, 2], dtype=np.int64))
    b2, e2, s2 = spans_with_scores(np.array([3, 2, 1, 0], dtype=np.int64), 1, np.array([0, 1, 9, 1], dtype=np.int64),
                                   np.array([-0.5, -1.25]), -30.0)
    return b.tolist() == [0, 4] and e.tolist() == [3, 9] and s.tolist() == [-31.75, -1.25] and \
        b2.tolist() == [0] and e2.tolist() == [3] and s2.tolist() == [-31.75]


def available() -> bool:
    """Whether the compiled span steps can be used (numba loaded, compiled, checked once per process)."""
    return kernelgate.checked(globals(), _self_check, "span steps")
