"""Per-token log-probabilities of texts under a causal language model (transformers; CPU or GPU).

Each text is encoded with the model's own tokenizer and cut to the model's context length (and to
`max_tokens`; a cut text says so). With `start_token` the start token (BOS, else EOS) goes first and every
text token is scored, as the model saw a training document; without it the text is encoded as
`tokenizer.encode(text)` does by default (the LLMSurgeon scripts' way: no start token for GPT-2/NeoX-style
tokenizers, so the first token is only context) and a text shorter than `min_tokens` gets no scores.
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
                 threads: int | None = 1, start_token: bool = True, max_tokens: int | None = None,
                 min_tokens: int = 0):
        import torch

        if threads:
            torch.set_num_threads(threads)
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        if device.startswith("cuda") and not torch.cuda.is_available():  # else .to() fails with an AssertionError
            raise UserError(f"--device {device}: no CUDA GPU is usable here (torch.cuda.is_available() is False); "
                            "use --device cpu or --device auto")
        from transformers import AutoModelForCausalLM, AutoTokenizer

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
        self.start_token, self.min_tokens = start_token, min_tokens
        self.limit = min(self.ctx, max_tokens) if max_tokens else self.ctx  # encoded tokens kept

    def score(self, texts: Sequence[str]) -> list[TokenScores]:
        out: list[TokenScores] = []
        for i in range(0, len(texts), self.batch_size):
            out += self._batch(texts[i:i + self.batch_size])
        return out

    def encode(self, text: str) -> tuple[list[int], bool]:
        """The token ids this scorer feeds the model for `text` (empty when too short) and whether it cut it."""
        if self.start_token:
            ids = list(self.tok.encode(text, add_special_tokens=False, verbose=False))  # long texts are cut below
            return [self.start, *ids[:self.limit - 1]], len(ids) > self.limit - 1
        ids = list(self.tok.encode(text, verbose=False))
        cut, ids = len(ids) > self.limit, ids[:self.limit]
        return (ids if len(ids) >= max(self.min_tokens, 1) else []), cut

    def score_ids(self, seqs: Sequence[Sequence[int]]) -> list[TokenScores]:
        """TokenScores of token-id sequences (each token after the first, given the ones before it)."""
        out: list[TokenScores] = []
        for i in range(0, len(seqs), self.batch_size):
            part = [list(s) for s in seqs[i:i + self.batch_size]]
            out += self._forward(part, [False] * len(part))
        return out

    def _batch(self, texts: Sequence[str]) -> list[TokenScores]:
        seqs, cut = [], []
        for t in texts:
            ids, c = self.encode(t)
            seqs.append(ids)
            cut.append(c)
        return self._forward(seqs, cut)

    def _forward(self, seqs: list[list[int]], cut: list[bool]) -> list[TokenScores]:
        import torch

        if not any(seqs):
            return [TokenScores([], [], [], c) for c in cut]
        width = max(len(s) for s in seqs)
        pad = self.start
        ids = torch.tensor([s + [pad] * (width - len(s)) for s in seqs], device=self.device)
        mask = torch.tensor([[1] * len(s) + [0] * (width - len(s)) for s in seqs], device=self.device)
        with torch.inference_mode():
            logits = self.model(input_ids=ids, attention_mask=mask).logits[:, :-1].float()
            logp = torch.log_softmax(logits, dim=-1)
            p = logp.exp()
            mu = (p * logp).sum(-1)
            var = (p * (logp - mu.unsqueeze(-1)) ** 2).sum(-1)  # two-pass: E[x^2] - mu^2 cancels in float32
            sigma = var.clamp_min(0).sqrt()
            target = logp.gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1)
        res = []
        for b, s in enumerate(seqs):
            n = max(len(s) - 1, 0)
            res.append(TokenScores(target[b, :n].tolist(), mu[b, :n].tolist(), sigma[b, :n].tolist(), cut[b]))
        return res
