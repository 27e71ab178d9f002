"""Membership-inference features of one text from its token log-probabilities (one definition each).

The inputs are per-token values for the text's scored tokens in order, each conditioned on the tokens
before it:

- `logprobs[t]` = log p(x_t | x_<t)
- `mu[t]`, `sigma[t]` = mean and standard deviation of log p(z | x_<t) over the vocabulary, weighted by
  p(z | x_<t) (what Min-K%++ standardises with)

Definitions (LLMSurgeon's baselines; higher means "looks more like training data" only after the sign
flips the SQL applies, see int_mixture_mia_scores):

- loss: mean negative log-likelihood, -mean(logprobs).
- zlib: loss / len(zlib.compress(UTF-8 bytes, level)); the compressed length stands in for how much
  information the text has at all, so boilerplate does not look like training data just for being simple.
- Min-K%: mean of the lowest m of the n log-probabilities.
- Min-K%++: the same over the standardised (logprob - mu) / sigma.

Two scoring conventions differ in the details, because the paper's numbers came from the authors' scripts
(Yaxin9Luo/LLMSurgeon, baseline_method/src/labelshift/run_{mink,minkpp,zlib}_threshold*.py) and lmaudit's
earlier choices were the method papers' (`SCORINGS`):

- `authors` (the default): the text is encoded as `tokenizer.encode(text)` does by default (no start token
  for GPT-2/GPT-NeoX-style tokenizers, so the first token is context only), at most 512 tokens, a text of
  fewer than 2 tokens has no score; zlib level 6; m = max(1, floor(k n)); sigma floored at 1e-4 (their
  variance clamp at 1e-8).
- `lmaudit`: the model's start token is prepended so every token is scored; zlib level 9; m = ceil(k n), at
  least 1; a position with sigma = 0 (a one-hot distribution) contributes 0 to Min-K%++.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ingest.registry import Registry


@dataclass(frozen=True)
class Scoring:
    """How texts are tokenised and scored (see the module docstring)."""

    name: str
    start_token: bool  # prepend the model's start token, so the first text token is scored too
    max_tokens: int | None  # encoded tokens kept (before the model's own context limit)
    min_tokens: int  # encoded tokens a text needs to be scored at all
    zlib_level: int
    k_rule: str  # "ceil" or "floor" (then at least 1)
    sigma_floor: float | None  # None: sigma = 0 contributes 0; else sigma = max(sigma, floor)

    def params(self) -> dict:
        return {"scoring": self.name, "start_token": self.start_token, "max_tokens": self.max_tokens,
                "zlib_level": self.zlib_level, "k_rule": self.k_rule, "sigma_floor": self.sigma_floor}


SCORINGS: Registry[Scoring] = Registry("scoring convention")
AUTHORS = SCORINGS.add("authors", Scoring("authors", False, 512, 2, 6, "floor", 1e-4))
LMAUDIT = SCORINGS.add("lmaudit", Scoring("lmaudit", True, None, 0, 9, "ceil", None))


@dataclass(frozen=True)
class TextScore:
    n_tokens: int
    loss: float | None
    zlib_loss: float | None
    mink: float | None
    minkpp: float | None


def n_lowest(n: int, k: float, rule: str = "ceil") -> int:
    """How many of n tokens Min-K% averages: ceil(k n) (lmaudit) or int(k n) (the authors' scripts), at least
    1 (0 for an empty text)."""
    if n == 0:
        return 0
    return max(1, math.ceil(k * n - 1e-12) if rule == "ceil" else int(n * k))


def score_text(text: str, logprobs: Sequence[float], mu: Sequence[float], sigma: Sequence[float],
               k: float = 0.2, scoring: Scoring = LMAUDIT) -> TextScore:
    lp = np.asarray(logprobs, dtype=np.float64)
    n = int(lp.size)
    if n == 0:
        return TextScore(0, None, None, None, None)
    loss = float(-lp.mean())
    z = len(zlib.compress(text.encode("utf-8"), scoring.zlib_level))
    m = n_lowest(n, k, scoring.k_rule)
    mink = float(np.sort(lp)[:m].mean())
    s = np.asarray(sigma, dtype=np.float64)
    dev = lp - np.asarray(mu, dtype=np.float64)
    if scoring.sigma_floor is None:
        std = np.where(s > 0, dev / np.where(s > 0, s, 1.0), 0.0)
    else:
        std = dev / np.maximum(s, scoring.sigma_floor)
    minkpp = float(np.sort(std)[:m].mean())
    return TextScore(n, loss, loss / z if z else None, mink, minkpp)
