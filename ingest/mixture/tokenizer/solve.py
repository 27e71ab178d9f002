"""The linear program of Hayase et al. (2024): which mixture makes every merge the most frequent pair?

A BPE trainer picks, at step t, the pair with the highest count in its training data. If the training data
is a mixture with weights alpha of domains whose (per-byte) pair counts at step t are c_i,t(p), the chosen
merge m_t satisfies, for every other pair p,

    sum_i alpha_i (c_i,t(p) - c_i,t(m_t)) <= v_t + u_p      v_t, u_p >= 0, alpha on the simplex,

with every slack 0 when the references are the training data. Reference text is only a sample of each
domain, so the constraints are relaxed and the LP minimises sum_t v_t + sum_p u_p (HiGHS via scipy). The two
kinds of slack are the paper's (and its code's): v_t relaxes every constraint of merge step t (the merge was
a near tie in the reference text), u_p every constraint of pair p at *all* steps (p is over-represented in the
reference text: a name or phrase that the reference files have and the training files had not). Without u_p
such a pair is charged again at every step it out-counts the merge, hundreds of times, and the LP moves
alpha away from the domain that holds it; with u_p it costs once. `pair_slack=False` gives the LP with v_t only.

There is one constraint per (step, pair): millions for a real vocabulary. Only the pairs that are nearly the
most frequent at a step can bind, so constraints are added lazily: solve with the ones found so far, replay
the counts under the new alpha, add the `top_k` most violated pairs of every step that is violated, and stop
when nothing is (the LP optimum over *all* constraints then equals the one found; the tests check this
against the full LP). The replay keeps the alpha-weighted count of every pair up to date incrementally, so a
pass costs one vector comparison per step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ingest.mixture.tokenizer.counting import MergeLog

SCALE = 1e6  # counts per million bytes: keeps the LP's coefficients well above HiGHS's tolerances


@dataclass(frozen=True)
class LpSolution:
    alpha: np.ndarray  # (n_domains,) on the simplex
    slack: np.ndarray  # (n_steps,) v_t
    objective: float  # sum of the slack (counts per million bytes)
    n_constraints: int
    iterations: int  # LP solves
    status: str  # "optimal" or "max_iter"
    pair_slack: dict  # pair id -> u_p, for the pairs with a constraint (empty without pair slack)
    keys: tuple = ()  # the (step, pair) of every constraint used: seeds the LP of a bootstrap replicate


class CountReplay:
    """Per-domain pair counts at every merge step, for one frequency table (words x domains)."""

    def __init__(self, log: MergeLog, freqs: np.ndarray):
        self.log = log
        self.n = freqs.shape[1]
        order, starts, self.group_pair, self.step_groups = _groups(log)
        vals = log.ev_delta[order, None].astype(np.float64) * freqs[log.ev_word[order]]
        self.group_delta = np.add.reduceat(vals, starts, axis=0) if len(starts) else np.zeros((0, self.n))

    def _apply(self, C: np.ndarray, w: np.ndarray, alpha: np.ndarray, k: int) -> None:
        lo, hi = self.step_groups[k], self.step_groups[k + 1]
        if hi > lo:
            p, d = self.group_pair[lo:hi], self.group_delta[lo:hi]
            C[p] += d
            w[p] += d @ alpha

    def states(self, alpha: np.ndarray):
        """Yield (t, C, w) before each merge step t = 0..n_steps-1 and once after the last (t = n_steps):
        C (pairs x domains) the counts, w = C @ alpha kept up to date incrementally. C and w are updated in
        place: copy what you keep."""
        C = np.zeros((self.log.n_pairs, self.n))
        w = np.zeros(self.log.n_pairs)
        self._apply(C, w, alpha, 0)  # initial counts
        for t in range(self.log.n_steps + 1):
            yield t, C, w
            if t < self.log.n_steps:
                self._apply(C, w, alpha, t + 1)

    def top_counts(self) -> np.ndarray:
        """The highest pair count of every step under equal weights (the scale of `relative` steps)."""
        out = np.zeros(self.log.n_steps)
        for t, _, w in self.states(np.full(self.n, 1.0 / self.n)):
            if t < self.log.n_steps:
                out[t] = w.max() if w.size else 0.0
        return np.maximum(out, 1e-12)

    def violations(self, alpha: np.ndarray, slack: np.ndarray, top_k: int, tol: float,
                   seen: set[tuple[int, int]], scale: np.ndarray | None = None,
                   pair_slack: np.ndarray | None = None, noise: Any = None
                   ) -> tuple[list[int], list[int], list[np.ndarray]]:
        """Constraints (step, pair, row) violated at (alpha, slack, pair_slack) and not in `seen`: at most
        `top_k` per step, the most violated first; rows are divided by `scale[t]` (default 1), or, with
        `noise`, by each constraint's own bootstrap standard error (`noise.NoiseScale`). `seen` is updated.
        `pair_slack` (n_pairs,) is u_p; None = no pair slack."""
        steps, pairs, rows = [], [], []
        zero = np.zeros(self.n)
        noisy = noise.replay.states(noise.weights) if noise is not None else None
        for t, C, w in self.states(alpha):
            Cn = next(noisy)[1] if noisy is not None else None
            if t == self.log.n_steps:
                break
            m = int(self.log.merge_pair[t])
            wm = w[m] if m >= 0 else 0.0
            if noise is None:
                st = 1.0 if scale is None else scale[t]
                excess = w if pair_slack is None else w - pair_slack * st
                idx = np.flatnonzero(excess > wm + (slack[t] + tol) * st)
                div = np.full(idx.size, st)
                excess = excess[idx]
            else:  # in standard errors: (w_p - w_m) / se_tp - u_p > v_t; only w_p > w_m can be violated
                idx = np.flatnonzero(w > wm + tol)
                idx = idx[idx != m]
                div = noise.se(Cn, idx, m, t)
                excess = (w[idx] - wm) / div - (0.0 if pair_slack is None else pair_slack[idx])
                keep = excess > slack[t] + tol
                idx, div, excess = idx[keep], div[keep], excess[keep]
            if idx.size:
                if idx.size > top_k:
                    pick = np.argpartition(-excess, top_k - 1)[:top_k]
                    idx, div = idx[pick], div[pick]
                cm = C[m] if m >= 0 else zero
                for p, d in zip(idx.tolist(), div.tolist()):
                    if (t, p) not in seen:
                        seen.add((t, p))
                        steps.append(t)
                        pairs.append(p)
                        rows.append((C[p] - cm) / d)
        return steps, pairs, rows

    def rows_for(self, keys: list[tuple[int, int]], scale: np.ndarray | None = None,
                 noise: Any = None) -> list[np.ndarray]:
        """The constraint rows of the given (step, pair) keys under these counts (in the order given), divided
        as in `violations`."""
        want: dict[int, list[int]] = {}
        for i, (t, _) in enumerate(keys):
            want.setdefault(t, []).append(i)
        out: list[np.ndarray] = [np.zeros(self.n)] * len(keys)
        zero = np.zeros(self.n)
        noisy = noise.replay.states(noise.weights) if noise is not None else None
        for t, C, _ in self.states(np.full(self.n, 1.0 / self.n)):
            Cn = next(noisy)[1] if noisy is not None else None
            if t not in want:
                continue
            m = int(self.log.merge_pair[t])
            ix = want[t]
            ps = np.array([keys[i][1] for i in ix], dtype=np.int64)
            if noise is not None:
                div = noise.se(Cn, ps, m, t)
            else:
                div = np.full(len(ix), 1.0 if scale is None else scale[t])
            cm = C[m] if m >= 0 else zero
            for i, p, d in zip(ix, ps.tolist(), div.tolist()):
                out[i] = (C[p] - cm) / d
        return out

    def all_constraints(self) -> tuple[list[int], list[int], list[np.ndarray]]:
        """Every (step, pair, row) constraint that some alpha could violate: the full LP, for tests on small
        inputs."""
        steps, pairs, rows = [], [], []
        zero = np.zeros(self.n)
        for t, C, _ in self.states(np.full(self.n, 1.0 / self.n)):
            if t == self.log.n_steps:
                break
            m = int(self.log.merge_pair[t])
            D = C - (C[m] if m >= 0 else zero)
            for p in np.flatnonzero((D > 0).any(axis=1)).tolist():
                if p != m:
                    steps.append(t)
                    pairs.append(p)
                    rows.append(D[p].copy())
        return steps, pairs, rows


def _groups(log: MergeLog):
    """Events grouped by (step, pair): sort order, group starts, each group's pair, groups per step."""
    P = max(log.n_pairs, 1)
    key = (log.ev_step.astype(np.int64) + 1) * P + log.ev_pair
    order = np.argsort(key, kind="stable")
    sk = key[order]
    starts = np.flatnonzero(np.r_[True, sk[1:] != sk[:-1]]) if sk.size else np.zeros(0, dtype=np.int64)
    gkey = sk[starts]
    group_pair = (gkey % P).astype(np.int64)
    group_step = gkey // P  # step + 1
    step_groups = np.searchsorted(group_step, np.arange(log.n_steps + 2), side="left")
    return order, starts, group_pair, step_groups


def solve_lp(steps: list[int], rows: list[np.ndarray], n: int, n_steps: int, pairs: list[int] | None = None
             ) -> tuple[np.ndarray, np.ndarray, dict, float]:
    """min sum v + sum u  s.t.  row . alpha - v_step - u_pair <= 0, alpha on the simplex, v, u >= 0 (HiGHS).

    `pairs[r]` is the pair of row r (its u column); None = no pair slack. Returns alpha, v (n_steps,),
    u as {pair: value} and the objective."""
    from scipy import sparse
    from scipy.optimize import linprog

    slack = np.zeros(n_steps)
    if not rows:
        return np.full(n, 1.0 / n), slack, {}, 0.0
    R = len(rows)
    used, s_idx = np.unique(np.asarray(steps), return_inverse=True)
    blocks = [sparse.csr_matrix(np.vstack(rows)),
              sparse.csr_matrix((-np.ones(R), (np.arange(R), s_idx)), shape=(R, len(used)))]
    used_p = np.zeros(0, dtype=np.int64)
    if pairs is not None:
        used_p, p_idx = np.unique(np.asarray(pairs), return_inverse=True)
        blocks.append(sparse.csr_matrix((-np.ones(R), (np.arange(R), p_idx)), shape=(R, len(used_p))))
    A = sparse.hstack(blocks).tocsr()
    n_slack = len(used) + len(used_p)
    c = np.r_[np.zeros(n), np.ones(n_slack)]
    A_eq = np.r_[np.ones(n), np.zeros(n_slack)][None, :]
    res = linprog(c, A_ub=A, b_ub=np.zeros(R), A_eq=A_eq, b_eq=[1.0], bounds=(0, None), method="highs")
    if res.status != 0 or res.x is None:
        raise RuntimeError(f"HiGHS did not solve the merge LP: {res.message}")
    alpha = np.clip(res.x[:n], 0, None)
    alpha = alpha / alpha.sum()
    slack[used] = np.clip(res.x[n:n + len(used)], 0, None)
    u = dict(zip(used_p.tolist(), np.clip(res.x[n + len(used):], 0, None).tolist()))
    return alpha, slack, u, float(res.fun)


def solve_mixture(log: MergeLog, freqs: np.ndarray, *, top_k: int = 5, max_iter: int = 500, tol: float = 1e-6,
                  start: np.ndarray | None = None, relative: bool = False, pair_slack: bool = True,
                  seed_keys: "tuple | list" = (), noise: Any = None) -> LpSolution:
    """The LP over all merges of `log` with lazily added constraints; `freqs` (words x domains) are the
    word frequencies of each domain's reference text, already scaled per million bytes (see `per_byte`).
    `start` is the first alpha to look for violations at (default: uniform). `relative` divides step t's
    constraints by its top pair count, so every step weighs the same whatever its counts. `pair_slack`: the
    paper's u_p (see the module docstring); False = slack per step only. `seed_keys`: (step, pair)
    constraints to start from (another solution's `keys`: a bootstrap replicate then needs a round or two
    instead of dozens); the optimum does not depend on them. `noise`: divide every constraint by its bootstrap
    standard error (`noise.NoiseScale`), so a violation costs its size in standard errors. One HiGHS model is
    kept across the rounds (`highs.WarmLp`) and re-solved from its last basis."""
    from ingest.mixture.tokenizer.highs import WarmLp

    n = freqs.shape[1]
    replay = CountReplay(log, freqs)
    scale = replay.top_counts() if relative and noise is None else None
    alpha = np.full(n, 1.0 / n) if start is None else np.asarray(start, dtype=float)
    slack = np.zeros(log.n_steps)
    u = np.zeros(log.n_pairs) if pair_slack else None
    lp = WarmLp(n, pair_slack)
    keys: list[tuple[int, int]] = []
    seen: set[tuple[int, int]] = set()
    objective, status, it = 0.0, "max_iter", 0

    def solve(new_steps: list[int], new_pairs: list[int], new_rows: list[np.ndarray]):
        lp.add(new_steps, new_pairs, new_rows)
        keys.extend(zip(new_steps, new_pairs))
        a, v, found, obj = lp.solve(log.n_steps)
        if u is not None:
            u[:] = 0.0
            if found:
                u[np.fromiter(found.keys(), dtype=np.int64)] = np.fromiter(found.values(), dtype=float)
        return a, v, found, obj

    u_found: dict = {}
    if seed_keys:
        seeds = [(int(t), int(p)) for t, p in seed_keys if int(t) < log.n_steps]
        seen.update(seeds)
    if seed_keys and seeds:
        alpha, slack, u_found, objective = solve([t for t, _ in seeds], [p for _, p in seeds],
                                                 replay.rows_for(seeds, scale, noise))
    for it in range(1, max_iter + 1):
        new_steps, new_pairs, new_rows = replay.violations(alpha, slack, top_k, tol, seen, scale, u, noise)
        if not new_rows:
            status = "optimal"
            it -= 1
            break
        alpha, slack, u_found, objective = solve(new_steps, new_pairs, new_rows)
    if not keys:  # nothing was ever violated: every alpha fits; keep the start (uniform) and say so
        status = "unconstrained"
    return LpSolution(alpha=alpha, slack=slack, objective=objective, n_constraints=len(keys), iterations=it,
                      status=status, pair_slack={k: v for k, v in u_found.items() if v > 0}, keys=tuple(keys))


def per_byte(freqs: np.ndarray, word_bytes: np.ndarray) -> np.ndarray:
    """Word frequencies of each domain divided by the domain's bytes, times `SCALE`: pair counts then compare
    across domains of any sample size, and alpha is a share of bytes."""
    total = word_bytes @ freqs
    if np.any(total <= 0):
        raise ValueError("a domain has no reference text")
    return freqs / total * SCALE
