"""Membership-inference features of one text from its token log-probabilities (one definition each).

The inputs are per-token values for the text's tokens in order, each conditioned on the tokens before it
(the first on the model's start token):

- `logprobs[t]` = log p(x_t | x_<t)
- `mu[t]`, `sigma[t]` = mean and standard deviation of log p(z | x_<t) over the vocabulary, weighted by
  p(z | x_<t) (what Min-K%++ standardises with)

Definitions (LLMSurgeon's baselines; higher means "looks more like training data" only after the sign
flips the SQL applies, see int_mixture_mia_scores):

- loss: mean negative log-likelihood, -mean(logprobs).
- zlib: loss / len(zlib.compress(UTF-8 bytes, level 9)); the compressed length stands in for how much
  information the text has at all, so boilerplate does not look like training data just for being simple.
- Min-K%: mean of the lowest ceil(k * n) log-probabilities (k = 0.2); at least one token.
- Min-K%++: the same over the standardised (logprob - mu) / sigma; a position with sigma = 0 (a one-hot
  distribution) contributes 0.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class TextScore:
    n_tokens: int
    loss: float | None
    zlib_loss: float | None
    mink: float | None
    minkpp: float | None


def n_lowest(n: int, k: float) -> int:
    """How many of n tokens Min-K% averages: ceil(k n), at least 1 (0 for an empty text)."""
    return 0 if n == 0 else max(1, math.ceil(k * n - 1e-12))


def score_text(text: str, logprobs: Sequence[float], mu: Sequence[float], sigma: Sequence[float],
               k: float = 0.2) -> TextScore:
    lp = np.asarray(logprobs, dtype=np.float64)
    n = int(lp.size)
    if n == 0:
        return TextScore(0, None, None, None, None)
    loss = float(-lp.mean())
    z = len(zlib.compress(text.encode("utf-8"), 9))
    m = n_lowest(n, k)
    mink = float(np.sort(lp)[:m].mean())
    s = np.asarray(sigma, dtype=np.float64)
    std = np.where(s > 0, (lp - np.asarray(mu, dtype=np.float64)) / np.where(s > 0, s, 1.0), 0.0)
    minkpp = float(np.sort(std)[:m].mean())
    return TextScore(n, loss, loss / z if z else None, mink, minkpp)
