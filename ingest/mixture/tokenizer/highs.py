"""The merge LP as one HiGHS model that grows between lazy-constraint rounds (highspy).

Why not scipy's `linprog`: it builds and solves a new model every call, so every lazy round (and there are
dozens when all merges are used) starts the simplex from nothing. Here the model is kept: new constraint rows
and their slack columns are appended and HiGHS re-solves from the previous optimal basis (a few dual simplex
pivots per round instead of a full solve). The LP is the one of `solve.solve_lp`:

    min sum_t v_t + sum_p u_p   s.t.  row . alpha - v_t - u_p <= 0,  sum alpha = 1,  alpha, v, u >= 0

`solve_lp` (scipy, one shot) stays as the independent oracle the tests compare this model with.
"""

from __future__ import annotations

import numpy as np


class WarmLp:
    """A merge LP over `n` domains whose rows are added in batches; `solve()` warm-starts from the last basis."""

    def __init__(self, n: int, pair_slack: bool = True):
        import highspy

        self.n = n
        self.pair_slack = pair_slack
        self._inf = highspy.kHighsInf
        h = highspy.Highs()
        h.setOptionValue("output_flag", False)
        h.setOptionValue("random_seed", 0)
        h.setOptionValue("threads", 1)
        h.addCols(n, np.zeros(n), np.zeros(n), np.full(n, self._inf), 0, np.zeros(0, np.int32),
                  np.zeros(0, np.int32), np.zeros(0))
        h.addRows(1, np.array([1.0]), np.array([1.0]), n, np.array([0], np.int32), np.arange(n, dtype=np.int32),
                  np.ones(n))
        self.h = h
        self.step_col: dict[int, int] = {}
        self.pair_col: dict[int, int] = {}
        self.n_rows = 0

    def _cols(self, keys, table: dict[int, int]) -> None:
        new = sorted({int(k) for k in keys} - table.keys())
        if not new:
            return
        first = self.h.getNumCol()
        k = len(new)
        self.h.addCols(k, np.ones(k), np.zeros(k), np.full(k, self._inf), 0, np.zeros(0, np.int32),
                       np.zeros(0, np.int32), np.zeros(0))
        table.update({p: first + i for i, p in enumerate(new)})

    def add(self, steps: list[int], pairs: list[int], rows: list[np.ndarray]) -> None:
        """Append the constraints `rows[r] . alpha <= v_steps[r] (+ u_pairs[r])`."""
        if not rows:
            return
        self._cols(steps, self.step_col)
        if self.pair_slack:
            self._cols(pairs, self.pair_col)
        R = np.vstack(rows)
        k = R.shape[0]
        per = self.n + 1 + int(self.pair_slack)
        idx = np.empty((k, per), dtype=np.int32)
        val = np.empty((k, per))
        idx[:, :self.n] = np.arange(self.n)
        val[:, :self.n] = R
        idx[:, self.n] = [self.step_col[int(t)] for t in steps]
        val[:, self.n] = -1.0
        if self.pair_slack:
            idx[:, self.n + 1] = [self.pair_col[int(p)] for p in pairs]
            val[:, self.n + 1] = -1.0
        self.h.addRows(k, np.full(k, -self._inf), np.zeros(k), k * per, np.arange(0, k * per, per, dtype=np.int32),
                       idx.ravel(), val.ravel())
        self.n_rows += k

    def solve(self, n_steps: int) -> tuple[np.ndarray, np.ndarray, dict, float]:
        """alpha (on the simplex), v (n_steps,), u as {pair: value} and the objective; RuntimeError if HiGHS
        does not reach an optimum."""
        import highspy

        self.h.run()
        status = self.h.getModelStatus()
        if status != highspy.HighsModelStatus.kOptimal:
            raise RuntimeError(f"HiGHS did not solve the merge LP: {self.h.modelStatusToString(status)}")
        x = np.asarray(self.h.getSolution().col_value)
        alpha = np.clip(x[:self.n], 0, None)
        alpha = alpha / alpha.sum()
        v = np.zeros(n_steps)
        for t, c in self.step_col.items():
            v[t] = max(x[c], 0.0)
        u = {p: max(float(x[c]), 0.0) for p, c in self.pair_col.items()}
        return alpha, v, u, float(self.h.getInfo().objective_function_value)
