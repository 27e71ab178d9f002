"""Membership-inference scores: the features against hand-computed values, the batched scorer against one
unbatched forward pass per text, and `lmaudit score` into the lake (resumable, content-keyed)."""

from __future__ import annotations

import json
import math
import zlib

import numpy as np
import pytest

from ingest.lake import Lake, text_hash
from ingest.score.features import n_lowest, score_text

from conftest import run_cli


def test_features_match_hand_computed_values() -> None:
    lp = [-1.0, -2.0, -3.0, -4.0, -5.0, -0.5]
    mu = [-1.5, -1.0, -2.0, -3.0, -2.0, -1.0]
    sigma = [0.5, 2.0, 1.0, 0.0, 1.5, 0.25]
    text = "hello world, hello world"
    s = score_text(text, lp, mu, sigma, k=0.2)
    assert s.n_tokens == 6
    assert s.loss == pytest.approx(15.5 / 6)
    assert s.zlib_loss == pytest.approx((15.5 / 6) / len(zlib.compress(text.encode(), 9)))
    # k = 20% of 6 tokens: ceil(1.2) = 2 lowest log-probs: -5 and -4
    assert s.mink == pytest.approx(-4.5)
    # standardised: (lp - mu) / sigma = 1, -0.5, -1, 0 (sigma 0), -2, 2 -> two lowest -2, -1
    assert s.minkpp == pytest.approx(-1.5)
    assert [n_lowest(n, 0.2) for n in (0, 1, 5, 6, 10, 11)] == [0, 1, 1, 2, 2, 3]
    empty = score_text("", [], [], [])
    assert (empty.n_tokens, empty.loss, empty.mink) == (0, None, None)


def test_batched_scorer_equals_one_forward_pass_per_text(mini_stack) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from ingest.score.logprobs import HFScorer

    texts = ["The cat sat on the mat.", "import os\nprint(os.getcwd())", "x", "The cat " * 80]
    got = HFScorer(str(mini_stack["model"]), batch_size=3).score(texts)
    tok = AutoTokenizer.from_pretrained(mini_stack["model"])
    model = AutoModelForCausalLM.from_pretrained(mini_stack["model"]).eval()
    ctx = model.config.n_positions
    for text, g in zip(texts, got):
        ids = [tok.bos_token_id, *tok.encode(text, add_special_tokens=False)][:ctx]
        with torch.inference_mode():
            logits = model(input_ids=torch.tensor([ids])).logits[0, :-1].double().numpy()
        logz = np.log(np.exp(logits - logits.max(-1, keepdims=True)).sum(-1)) + logits.max(-1)
        logp = logits - logz[:, None]
        want = [logp[t, ids[t + 1]] for t in range(len(ids) - 1)]
        p = np.exp(logp)
        mu = (p * logp).sum(-1)
        sigma = np.sqrt(np.maximum((p * logp * logp).sum(-1) - mu * mu, 0))
        assert len(g.logprobs) == len(want)
        assert np.allclose(g.logprobs, want, atol=1e-4)
        assert np.allclose(g.mu, mu, atol=1e-4) and np.allclose(g.sigma, sigma, atol=1e-3)
        assert g.truncated == (len(tok.encode(text, add_special_tokens=False)) > ctx - 1)
    assert got[3].truncated and not got[0].truncated


def test_score_command_writes_resumable_content_keyed_rows(mini_stack, home, tmp_path) -> None:
    from ingest.importers.generations import import_generations
    from ingest.references import import_references

    lake = Lake(home)
    refs = tmp_path / "refs.jsonl"
    docs = mini_stack["docs"][:6]
    refs.write_text("".join(json.dumps({"text": d["text"][:300], "domain": d["domain"], "id": d["id"]}) + "\n"
                            for d in docs))
    import_references(lake, refs, folds=2, seed=0)
    gens = tmp_path / "g.jsonl"
    gens.write_text("".join(json.dumps({"text": t}) + "\n" for t in ["The cat sat.", "", "import os"]))
    import_generations(lake, gens, run_id="r", model="m", setting="unconditional")
    args = ["score", "--model", str(mini_stack["model"]), "--reference", "--run", "r", "--chunk-size", "4"]
    first = run_cli(*args, home=home, check=True)
    assert "scored reference: 6 texts (0/2 chunks already done)" in first.stdout
    assert "scored run:r: 2 texts" in first.stdout  # the empty generation is not scored
    rows = lake.read("text_scores").to_pylist()
    assert len(rows) == 8 and {r["item_kind"] for r in rows} == {"reference", "generation"}
    by_id = {r["item_id"]: r for r in rows}
    for r in lake.read("reference_docs").to_pylist():
        s = by_id[r["ref_doc_id"]]
        assert s["text_hash"] == text_hash(r["text"])
        assert s["loss"] == pytest.approx(-float(np.mean(s["token_logprobs"])), rel=1e-5)
        assert s["n_tokens"] == len(s["token_logprobs"]) and math.isfinite(s["minkpp"])
    again = run_cli(*args, home=home, check=True)
    assert "(2/2 chunks already done)" in again.stdout and lake.read("text_scores").num_rows == 8
    bad = run_cli("score", "--model", str(mini_stack["model"]), home=home)
    assert bad.returncode == 2 and "--reference and/or --run" in bad.stderr


def test_scoring_again_with_a_reference_model_replaces_the_rows_without_one(mini_stack, home, tmp_path) -> None:
    """The reference model is not part of a score's key (the model's own scores do not change with it), but it
    was part of the partition names: `score --run r` then `score --run r --ref-model M2` left two rows per
    text with one score_id, and the next `lmaudit build` failed its unique test. The second run replaces."""
    from ingest.importers.generations import import_generations

    lake = Lake(home)
    gens = tmp_path / "g.jsonl"
    gens.write_text("".join(json.dumps({"text": t}) + "\n" for t in ["The cat sat.", "import os", "def f(x):"]))
    import_generations(lake, gens, run_id="r", model="m", setting="unconditional")
    model = str(mini_stack["model"])
    run_cli("score", "--model", model, "--run", "r", home=home, check=True)
    without = {r["score_id"]: r for r in lake.read("text_scores").to_pylist()}
    run_cli("score", "--model", model, "--run", "r", "--ref-model", model, home=home, check=True)
    rows = lake.read("text_scores").to_pylist()
    assert len(rows) == 3 and {r["score_id"] for r in rows} == set(without)
    assert all(r["ref_model"] == model and r["ref_loss"] == pytest.approx(r["loss"], rel=1e-6) for r in rows)
    assert all(r["loss"] == pytest.approx(without[r["score_id"]]["loss"], rel=1e-6) for r in rows)
    run_cli("score", "--model", model, "--run", "r", "--scoring", "lmaudit", home=home, check=True)
    assert lake.read("text_scores").num_rows == 6  # another convention is another key: kept side by side


def test_score_rows_record_the_device_they_ran_on_not_auto(mini_stack, home) -> None:
    """`--device auto` (the default) is resolved by the scorer; a row's params name the device it ran on, so
    scores from a GPU machine and from this one can be told apart."""
    import torch

    from ingest.score.run import ScoreJob, score_items

    lake = Lake(home)
    items = [(f"d{i}", "reference", d["text"][:200]) for i, d in enumerate(mini_stack["docs"][:2])]
    score_items(lake, ScoreJob(str(mini_stack["model"]), device="auto"), items, "reference", progress=False)
    devices = {json.loads(r["params"])["device"] for r in lake.read("text_scores").to_pylist()}
    assert devices == {"cuda" if torch.cuda.is_available() else "cpu"}
