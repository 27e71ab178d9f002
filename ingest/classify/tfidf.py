"""The CPU default: TF-IDF (word 1-2-grams + character 3-5-grams) + multinomial logistic regression.

Texts are cut to their first `max_chars` characters before vectorising, for training and scoring alike:
reference documents are often whole files while generations are a few hundred tokens, and a classifier
that learned from full documents sees a different length distribution at scoring time (label-shift
assumes p(x | domain) is the same on both sides). Saved with joblib (`model.joblib`) plus backend.json.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ingest.classify.interface import Backend, StepHook, register_backend


@register_backend
class TfidfBackend(Backend):
    name = "tfidf"

    def __init__(self, n_domains: int, seed: int = 0, C: float = 10.0, max_chars: int = 4000,
                 max_features: int = 200_000, min_df: int = 1, max_iter: int = 1000, solver: str = "newton-cg"):
        super().__init__(n_domains, seed)
        self.C = float(C)
        self.max_chars = int(max_chars)
        self.max_features = int(max_features)
        self.min_df = int(min_df)
        self.max_iter = int(max_iter)
        self.solver = str(solver)
        self.pipeline_ = None

    def _cut(self, texts: Sequence[str]) -> list[str]:
        return [t[: self.max_chars] for t in texts]

    def fit(self, texts: Sequence[str], labels: np.ndarray, on_step: StepHook = None) -> TfidfBackend:
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import FeatureUnion, Pipeline

        features = FeatureUnion([
            ("word", TfidfVectorizer(analyzer="word", ngram_range=(1, 2), sublinear_tf=True, min_df=self.min_df,
                                     max_features=self.max_features, dtype=np.float32)),
            ("char", TfidfVectorizer(analyzer="char", ngram_range=(3, 5), sublinear_tf=True, min_df=self.min_df,
                                     max_features=self.max_features, dtype=np.float32)),
        ])
        # Multinomial (softmax) for more than two classes with lbfgs / newton-cg (scikit-learn >= 1.5).
        # newton-cg: lbfgs was 3x slower here (scipy 1.17's L-BFGS-B costs ~0.1 s per call at 1e5+ variables).
        clf = LogisticRegression(C=self.C, max_iter=self.max_iter, solver=self.solver, random_state=self.seed)
        self.pipeline_ = Pipeline([("features", features), ("lr", clf)])
        self.pipeline_.fit(self._cut(texts), np.asarray(labels, dtype=int))
        classes = list(self.pipeline_.named_steps["lr"].classes_)
        if classes != list(range(self.n_domains)):
            raise ValueError(f"training labels cover classes {classes}, expected 0..{self.n_domains - 1}")
        if on_step:
            on_step(1, 1)
        return self

    def logits(self, texts: Sequence[str], on_step: StepHook = None) -> np.ndarray:
        if self.pipeline_ is None:
            raise RuntimeError("tfidf backend is not fitted")
        out = np.empty((len(texts), self.n_domains))
        step = 2048
        for start in range(0, len(texts), step):
            chunk = self._cut(texts[start:start + step])
            # decision_function = the multinomial logits; never -inf, unlike predict_log_proba
            d = self.pipeline_.decision_function(chunk)
            if d.ndim == 1:  # two domains: scikit-learn gives one logit, that of class 1 against class 0
                d = np.column_stack([np.zeros_like(d), d])
            out[start:start + len(chunk)] = d
            if on_step:
                on_step(min(start + step, len(texts)), len(texts))
        return out

    def save(self, path: Path) -> None:
        import joblib

        joblib.dump(self.pipeline_, Path(path) / "model.joblib", compress=3)
        self._write_meta(path)

    @classmethod
    def load(cls, path: Path) -> TfidfBackend:
        import joblib

        meta = cls._read_meta(path)
        obj = cls(n_domains=meta["n_domains"], seed=meta["seed"], **meta["params"])
        obj.pipeline_ = joblib.load(Path(path) / "model.joblib")
        return obj
