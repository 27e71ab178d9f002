"""Replay a merge list on word-frequency tables and log every change of every pair count.

Why a log of *word-level* events: the pair counts of a domain at merge step t are a sum over words of
(occurrences of the pair in the word's current segmentation) x (the word's frequency in the domain). The
segmentation of a word after t merges does not depend on any frequency, so one replay serves every domain
and every bootstrap replicate: an event (step, word, pair, delta) says "at step t, word w gained `delta`
occurrences of `pair`"; multiply by a frequency table and sum, and you have the counts of any set of
documents at any step. Step -1 holds the initial counts.

The replay is incremental, as in a BPE trainer: an index pair -> words that (may) contain it, so merge t
only touches the words that contain its pair. `brute_force_counts` re-segments every word from scratch
after each merge instead; the tests check one against the other.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence

import numpy as np


def merge_word(symbols: Sequence[str], a: str, b: str, ab: str) -> tuple[str, ...]:
    """Apply one merge left to right without overlaps, as BPE trainers do (``a a a`` -> ``aa a``)."""
    out: list[str] = []
    i, n = 0, len(symbols)
    while i < n:
        if i + 1 < n and symbols[i] == a and symbols[i + 1] == b:
            out.append(ab)
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return tuple(out)


def pair_counts(symbols: Sequence[str]) -> Counter:
    """Every adjacent pair of a segmentation (overlapping windows: ``a a a`` has (a, a) twice)."""
    return Counter(zip(symbols, symbols[1:]))


@dataclass(frozen=True)
class MergeLog:
    """The replay of `n_steps` merges over `n_words` words (see the module docstring).

    `pairs[k]` is pair id k; `merge_pair[t]` is the id of merge t's pair, or -1 when no word ever contains it
    (its count is 0 in every domain). Events are sorted by step (see `step_bounds`).
    """

    pairs: tuple[tuple[str, str], ...]
    merge_pair: np.ndarray  # (n_steps,) int64
    ev_step: np.ndarray  # (E,) int32, -1 = initial counts
    ev_word: np.ndarray  # (E,) int32
    ev_pair: np.ndarray  # (E,) int32
    ev_delta: np.ndarray  # (E,) int32
    n_words: int

    @property
    def n_steps(self) -> int:
        return int(self.merge_pair.shape[0])

    @property
    def n_pairs(self) -> int:
        return len(self.pairs)

    def first(self, n: int) -> "MergeLog":
        """The log of the first `n` merges only (a prefix of the replay: later merges change nothing before)."""
        n = max(0, min(int(n), self.n_steps))
        keep = self.ev_step < n
        return MergeLog(pairs=self.pairs, merge_pair=self.merge_pair[:n], ev_step=self.ev_step[keep],
                        ev_word=self.ev_word[keep], ev_pair=self.ev_pair[keep], ev_delta=self.ev_delta[keep],
                        n_words=self.n_words)

    def step_bounds(self) -> np.ndarray:
        """`b[t + 1]:b[t + 2]` slices the events of step t; `b[0]:b[1]` the initial ones (step -1)."""
        return np.searchsorted(self.ev_step, np.arange(-1, self.n_steps + 1), side="left")


def replay(words: Sequence[Sequence[str]], merges: Iterable[tuple[str, str]],
           merged: Callable[[str, str], str] = lambda a, b: a + b) -> MergeLog:
    """Apply `merges` in order to every word (its initial symbols) and log the pair-count events."""
    pair_id: dict[tuple[str, str], int] = {}
    pairs: list[tuple[str, str]] = []

    def pid(p: tuple[str, str]) -> int:
        i = pair_id.get(p)
        if i is None:
            i = pair_id[p] = len(pairs)
            pairs.append(p)
        return i

    steps: list[int] = []
    wids: list[int] = []
    pids: list[int] = []
    deltas: list[int] = []
    segs = [tuple(w) for w in words]
    where: dict[int, set[int]] = {}
    for w, s in enumerate(segs):
        for p, k in sorted(pair_counts(s).items()):
            i = pid(p)
            steps.append(-1), wids.append(w), pids.append(i), deltas.append(k)
            where.setdefault(i, set()).add(w)

    merge_pair = []
    for t, (a, b) in enumerate(merges):
        i = pair_id.get((a, b))
        merge_pair.append(-1 if i is None else i)
        if i is None:
            continue
        ab = merged(a, b)
        for w in sorted(where.pop(i, ())):
            s = segs[w]
            before = pair_counts(s)
            if before.get((a, b), 0) == 0:  # a stale index entry
                continue
            new = merge_word(s, a, b, ab)
            after = pair_counts(new)
            segs[w] = new
            for p in sorted(before.keys() | after.keys()):
                d = after.get(p, 0) - before.get(p, 0)
                if d:
                    j = pid(p)
                    steps.append(t), wids.append(w), pids.append(j), deltas.append(d)
                    if after.get(p, 0) > 0 and j != i:
                        where.setdefault(j, set()).add(w)

    return MergeLog(
        pairs=tuple(pairs), merge_pair=np.asarray(merge_pair, dtype=np.int64),
        ev_step=np.asarray(steps, dtype=np.int32), ev_word=np.asarray(wids, dtype=np.int32),
        ev_pair=np.asarray(pids, dtype=np.int32), ev_delta=np.asarray(deltas, dtype=np.int32),
        n_words=len(segs),
    )


def brute_force_counts(words: Sequence[Sequence[str]], freqs: np.ndarray, merges: Sequence[tuple[str, str]],
                       merged: Callable[[str, str], str] = lambda a, b: a + b) -> list[dict]:
    """Pair counts (pair -> frequency-weighted count vector) before each merge step and after the last,
    re-segmenting every word from scratch with merges[:t] each time. Quadratic: for tests only."""
    out = []
    for t in range(len(merges) + 1):
        counts: dict[tuple[str, str], np.ndarray] = {}
        for w, word in enumerate(words):
            s = tuple(word)
            for a, b in merges[:t]:
                s = merge_word(s, a, b, merged(a, b))
            for p, k in pair_counts(s).items():
                counts[p] = counts.get(p, 0) + k * freqs[w]
        out.append(counts)
    return out
