"""Synthetic label-shift problems with known mixtures, for tests and the protocol-sweep benchmark.

`GaussianProblem`: K domains with Gaussian class-conditionals in `dim` dimensions (means drawn with spread
`separation`; smaller = more confusion), a multinomial logistic regression trained on its own sample, and
reference posteriors cross-fitted with `n_folds` folds (every reference document scored by a model that
did not train on it). `sample(alpha, n)` draws n generations from the mixture alpha and scores them with the
model trained on all reference documents, as the pipeline does.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ingest.mixture.records import MixtureInputs


@dataclass
class GaussianProblem:
    k: int = 4
    dim: int = 6
    separation: float = 1.3
    n_ref_per_domain: int = 300
    n_folds: int = 5
    seed: int = 0
    n_calib_per_domain: int = 0
    means: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        from sklearn.linear_model import LogisticRegression
        from sklearn.model_selection import StratifiedKFold

        self.rng = np.random.default_rng(self.seed)
        self.means = self.rng.normal(0.0, self.separation, (self.k, self.dim))
        x, y = self.draw(np.full(self.k, self.n_ref_per_domain))
        folds = np.empty(y.shape[0], dtype=int)
        post = np.empty((y.shape[0], self.k))
        skf = StratifiedKFold(self.n_folds, shuffle=True, random_state=self.seed)
        for f, (tr, te) in enumerate(skf.split(x, y)):
            m = LogisticRegression(max_iter=2000).fit(x[tr], y[tr])
            post[te] = m.predict_proba(x[te])
            folds[te] = f
        self.model = LogisticRegression(max_iter=2000).fit(x, y)
        self.ref_posteriors, self.ref_labels, self.ref_folds = post, y, folds
        self.calib_posteriors = self.calib_labels = None
        if self.n_calib_per_domain:
            xc, yc = self.draw(np.full(self.k, self.n_calib_per_domain))
            self.calib_posteriors, self.calib_labels = self.model.predict_proba(xc), yc

    @property
    def domains(self) -> tuple[str, ...]:
        return tuple(f"d{i}" for i in range(self.k))

    def draw(self, counts) -> tuple[np.ndarray, np.ndarray]:
        counts = np.asarray(counts, dtype=int)
        x = np.vstack([self.rng.normal(self.means[d], 1.0, (int(n), self.dim)) for d, n in enumerate(counts)])
        return x, np.repeat(np.arange(self.k), counts)

    def sample(self, alpha, n: int) -> np.ndarray:
        """Posteriors of n generations drawn i.i.d. from the mixture alpha."""
        counts = self.rng.multinomial(n, np.asarray(alpha, dtype=float))
        x, _ = self.draw(counts)
        return self.model.predict_proba(x)

    def inputs(self, gen_posteriors: np.ndarray) -> MixtureInputs:
        return MixtureInputs(domains=self.domains, ref_posteriors=self.ref_posteriors, ref_labels=self.ref_labels,
                             ref_folds=self.ref_folds, gen_posteriors=gen_posteriors,
                             calib_posteriors=self.calib_posteriors, calib_labels=self.calib_labels)
