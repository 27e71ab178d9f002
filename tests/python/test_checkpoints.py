"""Training checkpoints: the trainer keeps loadable model folders every N steps without changing the final
weights, runs of a checkpoint record its step, and the sandbox writes the same documented mixture for every
checkpoint of a model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ingest.checkpoints import list_checkpoints, revision_of, step_of

pytestmark = pytest.mark.slow  # three short trainings, ~5 s


def _size():
    from ingest.sandbox.sizes import get_size

    return get_size("tiny").replace(n_layer=1, n_embd=32, n_head=2, context=16, steps=6, batch_size=2,
                                    warmup_steps=1, threads=1, bf16=False)


def _weights(folder: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(folder / "model.safetensors"))


def test_checkpoints_are_model_folders_and_leave_the_final_weights_alone(mini_stack, tmp_path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from ingest.sandbox.train import train_model

    corpus = mini_stack["root"] / "corpus" / "docs.jsonl"
    train_model(corpus, mini_stack["model"], _size(), tmp_path / "plain", progress=False)
    train_model(corpus, mini_stack["model"], _size(), tmp_path / "kept", progress=False, checkpoint_every=2)

    got = list_checkpoints(tmp_path / "kept")
    assert [c.step for c in got] == [2, 4, 6]
    assert [c.path.name for c in got] == ["step-000002", "step-000004", "kept"]
    assert list_checkpoints(tmp_path / "plain") == [] and step_of(str(tmp_path / "plain")) is None
    assert json.loads((got[0].path / "checkpoint.json").read_text()) == {"step": 2, "steps": 6}

    plain, kept = _weights(tmp_path / "plain"), _weights(tmp_path / "kept")
    assert plain.keys() == kept.keys() and all(torch.equal(plain[k], kept[k]) for k in plain)
    early = _weights(got[0].path)
    assert any(not torch.equal(early[k], kept[k]) for k in kept)

    # loads like any model, with the tokenizer and the context the model was trained with
    model = AutoModelForCausalLM.from_pretrained(str(got[1].path))
    tok = AutoTokenizer.from_pretrained(str(got[1].path))
    assert model.config.n_positions == 16 and tok.model_max_length == 16
    assert revision_of(str(got[1].path)) == "step4" and revision_of("org/hub-model") is None


def test_a_run_of_a_checkpoint_records_its_step(tmp_path) -> None:
    from ingest.checkpoints import checkpoint_dir, write_stamp
    from ingest.generate.backends import SamplingConfig
    from ingest.generate.runner import RunSpec, _run_row

    ckpt = checkpoint_dir(tmp_path / "model", 200)
    ckpt.mkdir(parents=True)
    write_stamp(ckpt, 200, 1200)
    row = _run_row(RunSpec("r", str(ckpt), "unconditional", "hf", None, SamplingConfig()), "f", 1, None, None)
    assert row["revision"] == "step200"
    plain = _run_row(RunSpec("r", str(tmp_path / "model"), "unconditional", "hf", None, SamplingConfig()), "f", 1,
                     None, None)
    assert plain["revision"] is None
