"""The membership-inference baselines of LLMSurgeon's Table 2 that are more than a function of one forward
pass's token log-probabilities (one definition each; the loss / zlib / Min-K% / Min-K%++ / Ref family lives
in ingest/score/features.py).

Each function returns the method's own score (`raw`, as its paper or the authors' script defines it) and
`member`, the same number oriented so that HIGHER means "looks more like training data", which is what the
marts threshold. Parameters whose value came from somewhere name their source in a comment.

- DC-PDD (Zhang et al., 2024c; the authors' `run_dcpdd_threshold.py`): over the first occurrence of each
  token id among the scored tokens, ce_i = p_i * log(1 / f(x_i)) with p_i the model's probability of the
  token and f its corpus frequency, clipped above at `a`; raw = -mean(ce) (their script calls a text a member
  when raw <= the median), member = mean(ce).
- ReCaLL (Xie et al., 2024; `run_recall_threshold.py`): raw = LL(x | prefix) / LL(x), both the average token
  log-likelihood (the conditional one scores every text token, the prefix's tokens are context only); their
  script calls a text a member when raw >= the median, member = raw.
- GradNorm (Wang et al., 2024, "Pandora's white-box"; the LLMSurgeon repository has no script for it): the
  gradient of the text's mean token loss with respect to the model's parameters, the L2 norm of each
  parameter tensor's gradient averaged over tensors (the per-parameter p-norm mean with p = 2, as the
  MIMIR/Pandora implementations of this attack compute it); members sit in flatter regions of the loss, so
  member = -raw.
- Neighbor (Mattern et al., 2023; the authors' `run_neighborhood_threshold.py`): raw = LL(x) - mean_j
  LL(x~_j) over perturbed neighbours x~_j, LL the average token log-likelihood; their script calls a text
  a member when raw >= the median, member = raw. Their neighbours replace random spans of words with
  random words from the reference texts' word pool (`perturb_words`, the default); the paper's neighbours
  come from a masked language model (ingest/score/neighbors.py, `--neighbor-model`).
- Joint-Logit (Carlini et al., 2022, "Membership inference attacks from first principles"; no script): the
  logit scaling phi(p) = log(p / (1 - p)) of the model's confidence in the sample, for a language model the
  joint probability of the scored tokens, p = prod_t p(x_t | x_<t): raw = member = S - log(1 - e^S), S the
  summed token log-probability (the offline, reference-free form: no shadow models).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

DCPDD_A = 0.01  # clipping bound `a`: run_dcpdd_threshold.py's default and exp_scripts/dcpdd.sh (--a 0.01)
RECALL_SHOTS = 12  # prefix shots: run_recall_threshold.py's default and exp_scripts/recall.sh (--num_shots 12)
RECALL_SEPARATOR = "\n\n"  # run_recall_threshold.py joins the shots with a blank line
GRADNORM_P = 2.0  # per-parameter-tensor norm
# Neighbor: run_neighborhood_threshold.py's defaults, as exp_scripts/neighborhood.sh ran them
NEIGHBOR_N = 10  # --n_perturbations
NEIGHBOR_PCT = 0.3  # --pct_words_masked
NEIGHBOR_SPAN = 2  # --span_length (words)
NEIGHBOR_MAX_FILL_TEXTS = 5000  # --max_fill_texts
NEIGHBOR_MIN_FILL_VOCAB = 5000  # --min_fill_vocab: a smaller pool of words is rebuilt from every text


@dataclass(frozen=True)
class MethodScore:
    raw: float | None
    member: float | None


NONE = MethodScore(None, None)


def dcpdd(target_ids: Sequence[int], logprobs: Sequence[float], freq: np.ndarray, a: float = DCPDD_A) -> MethodScore:
    """DC-PDD of one text: `target_ids[t]` is the scored token whose log-probability is `logprobs[t]`,
    `freq` the token frequency distribution (one value per token id)."""
    if len(target_ids) == 0:
        return NONE
    seen: set[int] = set()
    first = [i for i, t in enumerate(target_ids) if not (t in seen or seen.add(t))]
    ids = np.asarray(target_ids, dtype=np.int64)[first]
    p = np.exp(np.asarray(logprobs, dtype=np.float64)[first])
    f = np.where(ids < len(freq), freq[np.minimum(ids, len(freq) - 1)], 1.0 / max(len(freq), 1))
    ce = np.minimum(p * -np.log(np.clip(f, 1e-300, 1.0)), a)
    m = float(ce.mean())
    return MethodScore(-m, m)


def recall(ll_conditional: float | None, ll: float | None) -> MethodScore:
    """ReCaLL from the two average log-likelihoods (no score when the unconditional one is 0 or missing)."""
    if ll is None or ll_conditional is None or ll == 0.0 or not math.isfinite(ll) or not math.isfinite(ll_conditional):
        return NONE
    r = ll_conditional / ll
    return MethodScore(r, r)


def gradnorm(norms: Sequence[float]) -> MethodScore:
    """GradNorm from the per-parameter-tensor gradient norms."""
    if len(norms) == 0:
        return NONE
    g = float(np.mean(np.asarray(norms, dtype=np.float64)))
    return MethodScore(g, -g)


def joint_logit(logprobs: Sequence[float]) -> MethodScore:
    """Logit of the joint probability of the scored tokens (None when there are none or it is 1)."""
    if len(logprobs) == 0:
        return NONE
    s = float(np.sum(np.asarray(logprobs, dtype=np.float64)))
    if s >= 0.0:
        return NONE
    v = s - math.log(-math.expm1(s))
    return MethodScore(v, v)


def reference_frequencies(tokenizer, texts: Sequence[str], max_tokens: int = 512) -> np.ndarray:
    """Token frequencies of a pool of texts as run_dcpdd_threshold.py estimates them (its default,
    `--freq_strategy global`: the pooled category samples): each text encoded with truncation to `max_tokens`
    (their --max_tokens 512), counts over len(tokenizer) ids, add-one smoothing (count + 1) / (total + V)."""
    vocab = len(tokenizer)
    counts = np.zeros(vocab, dtype=np.int64)
    for t in texts:
        ids = np.asarray(tokenizer.encode(t, truncation=True, max_length=max_tokens), dtype=np.int64)
        ids = ids[(ids >= 0) & (ids < vocab)]
        np.add.at(counts, ids, 1)
    return (counts + 1.0) / (float(counts.sum()) + vocab)


def index_frequencies(logprob_tables: Sequence[np.ndarray], n_tokens: Sequence[int]) -> np.ndarray:
    """Token frequencies from the unigram tables of a corpus's indexes (log-probabilities; the DC-PDD paper
    estimates f from a large public corpus): several indexes are pooled weighted by their token counts."""
    width = max(len(t) for t in logprob_tables)
    total = float(sum(n_tokens))
    out = np.zeros(width, dtype=np.float64)
    for table, n in zip(logprob_tables, n_tokens):
        out[:len(table)] += np.exp(np.asarray(table, dtype=np.float64)) * (n / total if total else 1 / len(n_tokens))
    return out


def neighbor(ll: float | None, neighbour_lls: Sequence[float]) -> MethodScore:
    """Neighbor from the text's average log-likelihood and its neighbours' (those too short to score are
    left out, as the script skips their NaN)."""
    if ll is None or len(neighbour_lls) == 0:
        return NONE
    v = float(ll - np.mean(np.asarray(neighbour_lls, dtype=np.float64)))
    return MethodScore(v, v)


def fill_words(texts: Sequence[str], seed: int = 0, max_texts: int = NEIGHBOR_MAX_FILL_TEXTS,
               min_vocab: int = NEIGHBOR_MIN_FILL_VOCAB) -> list[str]:
    """The random-fill word pool of run_neighborhood_threshold.py: the sorted distinct whitespace-split words
    of at most `max_texts` texts (drawn with random.Random(seed).sample when there are more), or of every
    text when that pool has fewer than `min_vocab` words."""
    def pool(ts: Sequence[str]) -> list[str]:
        return sorted({w.strip() for t in ts for w in t.split() if w.strip()})

    use = random.Random(seed).sample(list(texts), k=max_texts) if len(texts) > max_texts else texts
    words = pool(use)
    return words if len(words) >= min_vocab or use is texts else pool(texts)


def perturb_words(words: Sequence[str], fill: Sequence[str], rng: random.Random, pct: float = NEIGHBOR_PCT,
                  span: int = NEIGHBOR_SPAN) -> list[str]:
    """One neighbour as run_neighborhood_threshold.py draws it: round(pct n) words (at least 1) to replace,
    in ceil(that / span) spans of `span` words starting at uniformly drawn positions (overlaps allowed, cut
    at the end), each word of a span replaced by a uniformly drawn pool word."""
    out = list(words)
    n = len(out)
    if n == 0 or not fill:
        return out
    n_spans = max(1, math.ceil(max(1, round(pct * n)) / span))
    for _ in range(n_spans):
        start = rng.randrange(0, n)
        for i in range(start, min(n, start + span)):
            out[i] = fill[rng.randrange(len(fill))]
    return out
