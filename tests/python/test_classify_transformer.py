"""The transformer backend behind the same interface: fine-tuned from a local checkpoint folder (a tiny
DistilBERT saved here, standing in for distilbert-base-uncased) and trained from scratch; cross-fitted,
calibrated, saved with save_pretrained and reloaded to the same posteriors. Kept tiny (seconds on a CPU)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ingest.classify import load_classifier, score_runs, train_classifier
from ingest.importers.generations import import_generations
from ingest.lake import Lake
from ingest.references import import_references

from test_classify import local_corpus, write_refs

pytestmark = pytest.mark.slow

TINY = {"max_len": 32, "batch_size": 8}


@pytest.fixture(scope="module")
def small_corpus():
    return local_corpus(per_domain=10, chars=200)


def tiny_checkpoint(path: Path, texts: list[str]) -> Path:
    """A 'pretrained' sequence classifier folder with a 2-label head (the classifier needs 3: re-initialised)."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import DistilBertConfig, DistilBertForSequenceClassification, PreTrainedTokenizerFast

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(texts, trainers.WordPieceTrainer(
        vocab_size=400, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"], show_progress=False))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="[PAD]", unk_token="[UNK]", cls_token="[CLS]",
                                   sep_token="[SEP]", mask_token="[MASK]")
    torch.manual_seed(0)
    model = DistilBertForSequenceClassification(DistilBertConfig(
        vocab_size=len(fast), max_position_embeddings=64, dim=32, n_layers=1, n_heads=2, hidden_dim=64,
        num_labels=2, pad_token_id=fast.pad_token_id))
    model.save_pretrained(path)
    fast.save_pretrained(path)
    return path


def check_trained(lake: Lake, name: str, gen_texts: list[str]) -> dict:
    (clf,) = [c for c in lake.read("classifiers").to_pylist() if c["name"] == name]
    assert clf["backend"] == "transformer"
    params = json.loads(clf["params"])
    folder = Path(params["path"])
    assert (folder / "model" / "config.json").exists() and (folder / "model" / "model.safetensors").exists()
    refs = [o for o in lake.read("classifier_outputs").to_pylist()
            if o["classifier_id"] == clf["classifier_id"] and o["item_kind"] == "reference"]
    assert len(refs) == 24
    p = np.array([o["probs"] for o in refs])
    assert np.all(np.isfinite(p)) and np.allclose(p.sum(axis=1), 1.0)
    assert p.std(axis=0).max() > 0  # not one constant posterior
    score_runs(lake, ["r1"], classifier=name, progress=False)
    gens = {g["generation_id"]: g["text"] for g in lake.read("generations").to_pylist()}
    out = [o for o in lake.read("classifier_outputs").to_pylist()
           if o["classifier_id"] == clf["classifier_id"] and o["item_kind"] == "generation"]
    assert len(out) == len(gen_texts)
    reloaded = load_classifier(lake, name)
    again = reloaded.posteriors([gens[o["item_id"]] for o in out])
    np.testing.assert_allclose(np.array([o["probs"] for o in out]), again, atol=1e-5)
    return params


def test_transformer_from_a_local_checkpoint_and_from_scratch(tmp_path: Path, small_corpus) -> None:
    lake = Lake(tmp_path / "w")
    import_references(lake, write_refs(tmp_path / "refs.jsonl", small_corpus, n=8, plant=False), folds=2)
    gen_texts = [t for ts in small_corpus.values() for t in ts[8:]]
    (tmp_path / "g.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in gen_texts))
    import_generations(lake, tmp_path / "g.jsonl", run_id="r1", model="m", setting="unconditional")

    ckpt = tiny_checkpoint(tmp_path / "ckpt", [t for ts in small_corpus.values() for t in ts])
    s = train_classifier(lake, backend="transformer", name="ft", progress=False,
                         params={"checkpoint": str(ckpt), "epochs": 1, "lr": 1e-3, **TINY})
    assert s.folds == 2 and s.n_docs == 24
    params = check_trained(lake, "ft", gen_texts)
    assert params["backend_params"]["checkpoint"] == str(ckpt.resolve())
    assert params["backend_params"]["lr"] == 1e-3 and params["backend_params"]["epochs"] == 1

    s = train_classifier(lake, backend="transformer", name="scratch", progress=False,
                         params={"epochs": 2, "lr": 3e-3, "dim": 32, "n_layers": 1, "n_heads": 2,
                                 "vocab_size": 300, **TINY})
    params = check_trained(lake, "scratch", gen_texts)
    assert params["backend_params"]["checkpoint"] is None and params["backend_params"]["dim"] == 32
    # the paper's fine-tuning recipe is the default when a checkpoint is given
    from ingest.classify import make_backend

    b = make_backend("transformer", 3, checkpoint=str(ckpt))
    assert (b.epochs, b.lr, b.max_len) == (3, 2e-5, 256)
