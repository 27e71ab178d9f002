"""Per-token log-probabilities of texts under a causal language model (transformers; CPU or GPU).

Each text is scored as the model would have seen it as a training document: its own tokenizer, its start
token (BOS, else EOS) first, at most the model's context length (longer texts are cut, and say so).
Besides log p(x_t | x_<t) the scorer keeps the mean and standard deviation of log p(z | x_<t) over the
vocabulary, which Min-K%++ needs and which cannot be recovered later without the model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ingest.errors import UserError


@dataclass(frozen=True)
class TokenScores:
    logprobs: list[float]
    mu: list[float]
    sigma: list[float]
    truncated: bool


class HFScorer:
    """Loads a local model folder (save_pretrained) once; `score(texts)` returns TokenScores per text."""

    def __init__(self, model: str, batch_size: int = 8, device: str = "cpu", dtype: str = "float32",
                 threads: int | None = 1):
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if threads:
            torch.set_num_threads(threads)
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        try:
            self.tok = AutoTokenizer.from_pretrained(model)
            self.model = AutoModelForCausalLM.from_pretrained(model, dtype=getattr(torch, dtype)).to(device).eval()
        except (OSError, ValueError) as e:
            raise UserError(f"cannot load model {model!r} ({str(e).splitlines()[0]}); pass a local folder written "
                            "by save_pretrained") from None
        start = self.tok.bos_token_id if self.tok.bos_token_id is not None else self.tok.eos_token_id
        if start is None:
            raise UserError(f"the tokenizer of {model!r} has neither a BOS nor an EOS token to start a text with")
        self.start = int(start)
        cfg = self.model.config
        self.ctx = int(getattr(cfg, "n_positions", None) or getattr(cfg, "max_position_embeddings", None) or 2048)
        self.batch_size, self.device = batch_size, device

    def score(self, texts: Sequence[str]) -> list[TokenScores]:
        out: list[TokenScores] = []
        for i in range(0, len(texts), self.batch_size):
            out += self._batch(texts[i:i + self.batch_size])
        return out

    def _batch(self, texts: Sequence[str]) -> list[TokenScores]:
        import torch

        seqs, cut = [], []
        for t in texts:
            ids = list(self.tok.encode(t, add_special_tokens=False, verbose=False))  # long texts are cut below
            cut.append(len(ids) > self.ctx - 1)
            seqs.append([self.start, *ids[:self.ctx - 1]])
        width = max(len(s) for s in seqs)
        pad = self.start
        ids = torch.tensor([s + [pad] * (width - len(s)) for s in seqs], device=self.device)
        mask = torch.tensor([[1] * len(s) + [0] * (width - len(s)) for s in seqs], device=self.device)
        with torch.inference_mode():
            logits = self.model(input_ids=ids, attention_mask=mask).logits[:, :-1].float()
            logp = torch.log_softmax(logits, dim=-1)
            p = logp.exp()
            mu = (p * logp).sum(-1)
            var = (p * logp * logp).sum(-1) - mu * mu
            sigma = var.clamp_min(0).sqrt()
            target = logp.gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1)
        res = []
        for b, s in enumerate(seqs):
            n = len(s) - 1
            res.append(TokenScores(target[b, :n].tolist(), mu[b, :n].tolist(), sigma[b, :n].tolist(), cut[b]))
        return res
