"""Sentence and document embedders for closeness to the training data.

The paper embeds with Qwen3-Embedding-8B (and checks with bge-m3), which cannot be downloaded here. One
interface (`fit(training_texts)` then `embed(texts) -> unit-length rows`) and one registry hold:

* ``lsa`` (default, offline): TF-IDF over words and word pairs fitted on the training sample, reduced by a
  truncated SVD (latent semantic analysis) and normalised. It sees shared vocabulary and topics, not
  meaning: a paraphrase with other words scores low, and absolute similarities are not comparable with a
  neural embedder's. Differences between prompt groups measured with the same embedder are what it is for.
* ``hf`` (``--embedder hf --embedder-param path=DIR [pooling=mean|cls|last]``): any local transformers
  encoder or decoder, pooled and normalised; this is how the paper's models plug in when their weights are on
  disk (Qwen3-Embedding: ``pooling=last``; bge-m3: ``pooling=cls``).
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from ingest.registry import Registry


class Embedder(Protocol):
    name: str

    def fit(self, training_texts: list[str]) -> "Embedder": ...

    def embed(self, texts: list[str]) -> np.ndarray: ...


EMBEDDERS: Registry = Registry("embedder")


def _unit(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(norms == 0, 1.0, norms)


@EMBEDDERS.register("lsa")
class LSAEmbedder:
    name = "lsa"

    def __init__(self, dims: int = 256, seed: int = 0, max_features: int = 100_000):
        self.dims, self.seed, self.max_features = dims, seed, max_features

    def fit(self, training_texts: list[str]) -> LSAEmbedder:
        from sklearn.decomposition import TruncatedSVD
        from sklearn.feature_extraction.text import TfidfVectorizer

        self.vec = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=2 if len(training_texts) >= 50 else 1,
                                   max_features=self.max_features, dtype=np.float64)
        x = self.vec.fit_transform(training_texts)
        k = max(1, min(self.dims, x.shape[0] - 1, x.shape[1] - 1))
        self.svd = TruncatedSVD(n_components=k, random_state=self.seed, algorithm="randomized", n_iter=7)
        self.svd.fit(x)
        return self

    def embed(self, texts: list[str]) -> np.ndarray:
        return _unit(self.svd.transform(self.vec.transform(texts)))


@EMBEDDERS.register("hf")
class HFEmbedder:
    """A local transformers model; texts are embedded as they are (add an instruction prefix to the texts
    yourself if the model card asks for one)."""
    name = "hf"

    def __init__(self, path: str, pooling: str = "mean", batch_size: int = 16, max_length: int = 512,
                 device: str = "cpu"):
        from pathlib import Path

        from ingest.errors import UserError

        if pooling not in ("mean", "cls", "last"):
            raise UserError(f"embedder pooling {pooling!r}: use mean, cls or last")
        if not Path(path).is_dir():
            raise UserError(f"embedding model folder {path} not found; pass a local folder saved with save_pretrained")
        from transformers import AutoModel, AutoTokenizer

        self.tok = AutoTokenizer.from_pretrained(path)
        if self.tok.pad_token is None:
            self.tok.pad_token = self.tok.eos_token
        self.tok.padding_side = "right"
        self.model = AutoModel.from_pretrained(path).to(device).eval()
        self.pooling, self.batch_size, self.max_length, self.device = pooling, batch_size, max_length, device

    def fit(self, training_texts: list[str]) -> HFEmbedder:
        return self  # a pretrained model is not fitted to the corpus

    def embed(self, texts: list[str]) -> np.ndarray:
        import torch

        rows = []
        with torch.no_grad():
            for i in range(0, len(texts), self.batch_size):
                enc = self.tok(texts[i:i + self.batch_size], return_tensors="pt", padding=True, truncation=True,
                               max_length=self.max_length).to(self.device)
                hidden = self.model(**enc).last_hidden_state.float()
                mask = enc["attention_mask"].unsqueeze(-1).float()
                if self.pooling == "cls":
                    pooled = hidden[:, 0]
                elif self.pooling == "last":
                    last = enc["attention_mask"].sum(dim=1) - 1
                    pooled = hidden[torch.arange(hidden.shape[0]), last]
                else:
                    pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1)
                rows.append(pooled.cpu().numpy())
        return _unit(np.concatenate(rows).astype(np.float64)) if rows else np.zeros((0, 1))


def nearest_similarity(items: np.ndarray, reference: np.ndarray, block: int = 2048) -> np.ndarray:
    """For each unit-length row of `items`, the cosine similarity to its nearest row of `reference`."""
    out = np.empty(items.shape[0])
    for i in range(0, items.shape[0], block):
        out[i:i + block] = (items[i:i + block] @ reference.T).max(axis=1) if reference.shape[0] else np.nan
    return out
