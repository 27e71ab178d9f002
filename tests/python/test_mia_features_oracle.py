"""Min-K%, Min-K%++ and zlib against an independent pure-Python implementation (math, heapq, no numpy) on
log-probs computed by hand from explicit next-token distributions: the vocabulary distribution at each
position is given, so log p(x_t), the Min-K%++ mean and standard deviation are derived from it here rather
than taken from the scorer."""

from __future__ import annotations

import heapq
import math
import random
import zlib

import pytest

from ingest.score.features import score_text


def _oracle(text: str, dists: list[list[float]], tokens: list[int], k: float = 0.2):
    lp = [math.log(d[t]) for d, t in zip(dists, tokens)]
    mu = [sum(p * math.log(p) for p in d if p > 0) for d in dists]
    var = [sum(p * (math.log(p) - m) ** 2 for p in d if p > 0) for d, m in zip(dists, mu)]
    sd = [math.sqrt(v) for v in var]
    n = len(lp)
    m = max(1, math.ceil(round(k * n, 9)))  # ceil(k n), 0.2 * 5 = 1.0000000000000002 rounded first
    loss = -sum(lp) / n
    mink = sum(heapq.nsmallest(m, lp)) / m
    std = [(x - a) / s if s > 0 else 0.0 for x, a, s in zip(lp, mu, sd)]
    minkpp = sum(heapq.nsmallest(m, std)) / m
    return lp, mu, sd, loss, loss / len(zlib.compress(text.encode("utf-8"), 9)), mink, minkpp


def test_two_token_vocabulary_by_hand() -> None:
    # p = (0.5, 0.5) at every position: log p = log 0.5, mu = log 0.5, sigma = 0 -> Min-K%++ 0
    dists, tokens = [[0.5, 0.5]] * 5, [0, 1, 0, 1, 1]
    lp, mu, sd, loss, zl, mink, minkpp = _oracle("abab", dists, tokens)
    assert loss == pytest.approx(math.log(2)) and mink == pytest.approx(math.log(0.5)) and minkpp == 0.0
    s = score_text("abab", lp, mu, sd)
    assert (s.loss, s.zlib_loss, s.mink, s.minkpp) == pytest.approx((loss, zl, mink, minkpp))


@pytest.mark.parametrize("n", [1, 4, 5, 6, 11, 37])
def test_random_distributions_against_the_oracle(n: int) -> None:
    rnd = random.Random(n)
    dists, tokens = [], []
    for _ in range(n):
        w = [rnd.random() ** 3 + 1e-6 for _ in range(7)]
        dists.append([x / sum(w) for x in w])
        tokens.append(rnd.randrange(7))
    text = "".join(rnd.choice("abc \n") for _ in range(3 * n))
    lp, mu, sd, loss, zl, mink, minkpp = _oracle(text, dists, tokens)
    s = score_text(text, lp, mu, sd, k=0.2)
    assert s.n_tokens == n
    assert s.loss == pytest.approx(loss, rel=1e-12)
    assert s.zlib_loss == pytest.approx(zl, rel=1e-12)
    assert s.mink == pytest.approx(mink, rel=1e-12)
    assert s.minkpp == pytest.approx(minkpp, rel=1e-12)
