"""Neighbours from a masked language model: the Neighbor paper's way (Mattern et al., 2023), offered beside
the authors' random-word neighbours (ingest/score/methods.py `perturb_words`, the default) as
`lmaudit score --methods neighbor --neighbor-model PATH`.

A neighbour masks the same amount of text as the authors' script (round(0.3 n) words, at least 1, in spans
of 2 words at uniformly drawn starts: `masked_positions`) and fills every masked word with the masked LM's
most likely token there (all masks of a neighbour filled in one pass, given the unmasked words), never a
special token nor the word it replaces when that word is one token of the masked LM. Greedy filling keeps a
neighbour a function of the text and the drawn positions, so a score can be recomputed.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

from ingest.errors import UserError
from ingest.score import methods as M


def masked_positions(n: int, rng: random.Random, pct: float = M.NEIGHBOR_PCT, span: int = M.NEIGHBOR_SPAN) -> list[int]:
    """The word positions one neighbour replaces (sorted, distinct): as `perturb_words` chooses spans, with
    no draws for fill words."""
    if n == 0:
        return []
    chosen: set[int] = set()
    for _ in range(max(1, math.ceil(max(1, round(pct * n)) / span))):
        start = rng.randrange(0, n)
        chosen.update(range(start, min(n, start + span)))
    return sorted(chosen)


class MaskedLMFiller:
    """A masked LM folder (save_pretrained) loaded once; `fill` makes neighbours of one text."""

    def __init__(self, path: str, device: str = "cpu"):
        from pathlib import Path

        if not Path(path).is_dir():  # refused before transformers is imported
            raise UserError(f"--neighbor-model {path} is not a masked language model (no such folder); pass a folder "
                            "written by save_pretrained of a BERT-style model")
        import torch
        from transformers import AutoModelForMaskedLM, AutoTokenizer

        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        try:
            self.tok = AutoTokenizer.from_pretrained(path)
            self.model = AutoModelForMaskedLM.from_pretrained(path).to(device).eval()
        except (OSError, ValueError, KeyError) as e:
            raise UserError(f"--neighbor-model {path} is not a masked language model ({str(e).splitlines()[0][:160]});"
                            " pass a folder written by save_pretrained of a BERT-style model") from None
        if self.tok.mask_token_id is None:
            raise UserError(f"--neighbor-model {path}: its tokenizer has no mask token; pass a BERT-style masked "
                            "language model")
        self.device = device
        self.special = sorted(set(self.tok.all_special_ids))
        cfg_limit = getattr(self.model.config, "max_position_embeddings", None) or 512
        self.limit = min(int(self.tok.model_max_length or cfg_limit), int(cfg_limit))

    def fill(self, words: Sequence[str], masks: Sequence[Sequence[int]]) -> list[list[str]]:
        """One neighbour per entry of `masks` (word positions to replace); masks past the masked LM's
        context keep their words."""
        import torch

        sets = [set(m) for m in masks]
        texts = [" ".join(self.tok.mask_token if i in m else w for i, w in enumerate(words)) for m in sets]
        enc = self.tok(texts, truncation=True, max_length=self.limit, padding=True, return_tensors="pt").to(self.device)
        with torch.inference_mode():
            logits = self.model(**enc).logits.float()
            logits[..., self.special] = float("-inf")
        out = []
        for b, m in enumerate(masks):
            where = (enc["input_ids"][b] == self.tok.mask_token_id).nonzero().flatten().tolist()
            new = list(words)
            for pos, at in zip(sorted(m), where):
                row = logits[b, at].clone().detach()
                own = self.tok(words[pos], add_special_tokens=False)["input_ids"]
                if len(own) == 1:
                    row[own[0]] = float("-inf")
                new[pos] = self.tok.decode([int(row.argmax())]).strip() or words[pos]
            out.append(new)
        return out
