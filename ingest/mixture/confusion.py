"""Confusion matrices from cross-fitted reference posteriors.

Orientation (the paper's; docs/mixture-method.md, section 3): rows are TRUE domains, columns PREDICTED domains, so that
E_gen[f(x)] = C^T pi. (QuaPy stores the transpose, M[i, j] = P(yhat = i | y = j), and solves M p = q.)

- soft: C[i, j] = mean of f(x)_j over reference documents x of domain i (rows sum to 1).
- hard: C[i, j] = share of reference documents of domain i whose argmax is j (rows sum to 1).
- joint (for BBSE/RLLS): J[j, i] = P(yhat = j, y = i), i.e. (counts or summed posteriors) / n_ref, in
  QuaPy's (predicted, true) orientation.

Argmax ties go to the lowest column index (numpy's argmax), as in scikit-learn's `predict`.
The posteriors are given: this module never scores a document; cross-fitting happened upstream.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def onehot(labels: np.ndarray, k: int) -> np.ndarray:
    out = np.zeros((labels.shape[0], k))
    out[np.arange(labels.shape[0]), labels] = 1.0
    return out


def support(labels: np.ndarray, k: int) -> np.ndarray:
    return np.bincount(labels, minlength=k)


def soft_confusion(posteriors: np.ndarray, labels: np.ndarray, k: int) -> np.ndarray:
    """Row i = mean posterior of the documents of domain i. A domain without documents gets an identity row."""
    sums = onehot(labels, k).T @ posteriors
    n = support(labels, k)
    c = np.eye(k)
    has = n > 0
    c[has] = sums[has] / n[has, None]
    return c


def hard_confusion(posteriors: np.ndarray, labels: np.ndarray, k: int) -> np.ndarray:
    """Row i = share of argmax predictions of the documents of domain i. Empty domain: identity row."""
    return soft_confusion(onehot(np.argmax(posteriors, axis=1), k), labels, k)


def joint_confusion(posteriors: np.ndarray, labels: np.ndarray, k: int, mode: str = "hard") -> np.ndarray:
    """J[j, i] = P(yhat = j, y = i) on the reference set (QuaPy's orientation: predicted x true)."""
    p = onehot(np.argmax(posteriors, axis=1), k) if mode == "hard" else posteriors
    return (onehot(labels, k).T @ p).T / labels.shape[0]


def hard_counts(posteriors: np.ndarray, k: int) -> np.ndarray:
    """Share of argmax labels (classify and count)."""
    return np.bincount(np.argmax(posteriors, axis=1), minlength=k) / posteriors.shape[0]


def condition_number(c: np.ndarray) -> float:
    """2-norm condition number (ratio of extreme singular values); inf for a singular matrix."""
    s = np.linalg.svd(np.asarray(c, dtype=float), compute_uv=False)
    if s[-1] <= s[0] * np.finfo(float).eps * c.shape[0]:
        return float("inf")
    return float(s[0] / s[-1])


@dataclass
class ConfusionSummary:
    domains: tuple[str, ...]
    soft: np.ndarray
    hard: np.ndarray
    soft_condition_number: float
    hard_condition_number: float
    support: np.ndarray

    def to_rows(self, **extra) -> list[dict]:
        """Long form for `fct_confusion`: one row per (kind, true_domain, predicted_domain)."""
        rows = []
        for kind, c, cond in (("soft", self.soft, self.soft_condition_number),
                              ("hard", self.hard, self.hard_condition_number)):
            for i, di in enumerate(self.domains):
                for j, dj in enumerate(self.domains):
                    rows.append(dict(extra, kind=kind, true_domain=di, predicted_domain=dj, value=float(c[i, j]),
                                     condition_number=cond, support=int(self.support[i])))
        return rows


def confusion_summary(inputs) -> ConfusionSummary:
    """Soft and hard C, their condition numbers and the per-domain support of a `MixtureInputs`."""
    k = inputs.k
    soft = soft_confusion(inputs.ref_posteriors, inputs.ref_labels, k)
    hard = hard_confusion(inputs.ref_posteriors, inputs.ref_labels, k)
    return ConfusionSummary(domains=inputs.domains, soft=soft, hard=hard,
                            soft_condition_number=condition_number(soft),
                            hard_condition_number=condition_number(hard),
                            support=support(inputs.ref_labels, k))
