"""Document quality scorers: which candidate documents are worth taking a sentence from.

The paper's filter is the FineWeb-Edu classifier (score 0-5, keep >= 2), a model that cannot be downloaded
here. Both live behind one interface (`score(texts) -> list[float]` on a 0-5 scale) and one registry:

* ``heuristic`` (default, offline): five Gopher-style checks of ordinary prose, one point each: a sensible
  number of words, mean word length 3-10 characters, >= 80% of words with a letter, at least two of the
  language's 20 most frequent words, and >= 30% of non-empty lines ending in terminal punctuation. It rejects
  tables, code, lists and boilerplate fragments, not dull text: it is a floor, not FineWeb-Edu's judgement.
* ``hf`` (``--quality hf --quality-param path=DIR``): a local sequence-classification model with one
  regression output, such as the FineWeb-Edu classifier saved with ``save_pretrained``; its raw output is
  the score.
"""

from __future__ import annotations

from typing import Protocol

from ingest.registry import Registry


class QualityScorer(Protocol):
    name: str

    def score(self, texts: list[str]) -> list[float]: ...


QUALITY_SCORERS: Registry = Registry("quality scorer")


@QUALITY_SCORERS.register("heuristic")
class HeuristicQuality:
    name = "heuristic"

    def __init__(self, lang: str = "en", min_words: int = 20, max_words: int = 100_000):
        import wordfreq

        self.lang, self.min_words, self.max_words = lang, min_words, max_words
        self.common = set(wordfreq.top_n_list(lang, 20))

    def _one(self, text: str) -> float:
        words = text.split()
        if not words:
            return 0.0
        points = float(self.min_words <= len(words) <= self.max_words)
        points += 3 <= sum(len(w) for w in words) / len(words) <= 10
        points += sum(any(c.isalpha() for c in w) for w in words) >= 0.8 * len(words)
        points += len(self.common & {w.lower().strip(".,;:!?\"'()") for w in words}) >= 2
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        points += sum(ln[-1] in ".!?\"')" for ln in lines) >= 0.3 * len(lines)
        return points

    def score(self, texts: list[str]) -> list[float]:
        return [self._one(t) for t in texts]


@QUALITY_SCORERS.register("hf")
class HFQuality:
    """A local transformers sequence-classification model with a single (regression) output."""
    name = "hf"

    def __init__(self, path: str, batch_size: int = 16, max_length: int = 512, device: str = "cpu"):
        from pathlib import Path

        from ingest.errors import UserError

        if not Path(path).is_dir():
            raise UserError(f"quality model folder {path} not found; pass a local folder saved with save_pretrained")
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        self.tok = AutoTokenizer.from_pretrained(path)
        self.model = AutoModelForSequenceClassification.from_pretrained(path).to(device).eval()
        self.batch_size, self.max_length, self.device = batch_size, max_length, device

    def score(self, texts: list[str]) -> list[float]:
        import torch

        out: list[float] = []
        with torch.no_grad():
            for i in range(0, len(texts), self.batch_size):
                enc = self.tok(texts[i:i + self.batch_size], return_tensors="pt", padding=True, truncation=True,
                               max_length=self.max_length).to(self.device)
                logits = self.model(**enc).logits
                out.extend(float(x) for x in logits[:, 0].float().cpu())
        return out
