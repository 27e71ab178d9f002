"""The `hf` quality scorer and embedder of the specific-prompt pipeline, on real local transformers models.

The paper's models (FineWeb-Edu classifier, Qwen3-Embedding, bge-m3) cannot be downloaded here, so the same
code paths run on small models saved in the test: the mini stack's GPT-2 as an encoder, and a GPT-2 sequence
classifier with one regression output. Oracles: the pooled hidden states computed by hand with torch, and
the classifier's logits called directly.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from ingest.errors import UserError
from ingest.prompts.specific.embedders import EMBEDDERS
from ingest.prompts.specific.quality import QUALITY_SCORERS

TEXTS = ["The cat sat on the mat.", "import os", "A longer sentence about the weather and the sea today."]


def _hand_pooled(model_dir: Path, pooling: str) -> np.ndarray:
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModel.from_pretrained(model_dir).eval()
    rows = []
    with torch.no_grad():
        for t in TEXTS:  # one text at a time: no padding involved
            ids = tok(t, return_tensors="pt")
            h = model(**ids).last_hidden_state[0].float()
            v = {"mean": h.mean(dim=0), "cls": h[0], "last": h[-1]}[pooling]
            rows.append((v / v.norm()).numpy())
    return np.stack(rows)


@pytest.mark.parametrize("pooling", ["mean", "cls", "last"])
def test_hf_embedder_pools_like_the_hand_computation(mini_stack, pooling: str) -> None:
    emb = EMBEDDERS.create("hf", path=str(mini_stack["model"]), pooling=pooling, batch_size=3)
    got = emb.fit(["unused"]).embed(TEXTS)  # batched, so the padded positions must be masked out
    assert got.shape[0] == len(TEXTS)
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-9)
    np.testing.assert_allclose(got, _hand_pooled(mini_stack["model"], pooling), atol=2e-5)


def test_hf_quality_scores_are_the_regression_output(mini_stack, tmp_path: Path) -> None:
    from transformers import AutoTokenizer, GPT2Config, GPT2ForSequenceClassification

    torch.manual_seed(1)
    cfg = GPT2Config.from_pretrained(mini_stack["model"], num_labels=1, pad_token_id=0)
    folder = tmp_path / "quality"
    GPT2ForSequenceClassification(cfg).save_pretrained(folder)
    AutoTokenizer.from_pretrained(mini_stack["model"]).save_pretrained(folder)
    scorer = QUALITY_SCORERS.create("hf", path=str(folder), batch_size=1)
    got = scorer.score(TEXTS)
    model = GPT2ForSequenceClassification.from_pretrained(folder).eval()
    tok = AutoTokenizer.from_pretrained(folder)
    with torch.no_grad():
        want = [float(model(**tok(t, return_tensors="pt")).logits[0, 0]) for t in TEXTS]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_hf_components_refuse_bad_options(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="pooling"):
        EMBEDDERS.create("hf", path=str(tmp_path), pooling="max")
    with pytest.raises(UserError, match="not found"):
        EMBEDDERS.create("hf", path=str(tmp_path / "nope"))
    with pytest.raises(UserError, match="no parameter"):
        EMBEDDERS.create("lsa", path="x")
