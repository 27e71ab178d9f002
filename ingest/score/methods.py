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
- Joint-Logit (Carlini et al., 2022, "Membership inference attacks from first principles"; no script): the
  logit scaling phi(p) = log(p / (1 - p)) of the model's confidence in the sample, for a language model the
  joint probability of the scored tokens, p = prod_t p(x_t | x_<t): raw = member = S - log(1 - e^S), S the
  summed token log-probability (the offline, reference-free form: no shadow models).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

DCPDD_A = 0.01  # clipping bound `a`: run_dcpdd_threshold.py's default and exp_scripts/dcpdd.sh (--a 0.01)
RECALL_SHOTS = 12  # prefix shots: run_recall_threshold.py's default and exp_scripts/recall.sh (--num_shots 12)
RECALL_SEPARATOR = "\n\n"  # run_recall_threshold.py joins the shots with a blank line
GRADNORM_P = 2.0  # per-parameter-tensor norm


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
