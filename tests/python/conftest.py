"""Shared fixtures: a fresh warehouse folder per test, and a way to run the real `lmaudit` command."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ingest.lake import Lake

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / "warehouse"
    Lake(h).init()
    return h


@pytest.fixture
def lake(home: Path) -> Lake:
    return Lake(home)


def run_cli(*args: str, home: Path | None = None, check: bool = False) -> subprocess.CompletedProcess:
    """Run `python -m ingest.cli.main ...` as a user would run `lmaudit ...`."""
    env = dict(os.environ)
    if home is not None:
        env["LMAUDIT_HOME"] = str(home)
    env["COLUMNS"] = "200"
    proc = subprocess.run([sys.executable, "-m", "ingest.cli.main", *args], capture_output=True, text=True,
                          env=env, cwd=REPO)
    if check and proc.returncode != 0:
        raise AssertionError(f"lmaudit {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


@pytest.fixture(scope="session")
def tiny_sandbox_build(tmp_path_factory):
    """The tiny sandbox (corpus, tokenizer, index, model: ~55 s) built from nothing once per test session, as
    `lmaudit sandbox build --size tiny` builds it into a warehouse: (SandboxPaths, seconds). test_sandbox.py
    checks this build stage by stage; tests that run the demo or gpu_check seed their warehouse with a copy
    (`seed_tiny_sandbox`), so their sandbox step is a cache hit instead of training the same model again."""
    import time

    from ingest.sandbox import build_sandbox
    from ingest.sandbox.indexing import sandbox_index_builder

    root = tmp_path_factory.mktemp("tiny-sandbox") / "warehouse" / "sandbox" / "tiny-seed0"
    t0 = time.perf_counter()
    paths = build_sandbox("tiny", root, seed=0, index_builder=sandbox_index_builder, progress=False)
    return paths, time.perf_counter() - t0


@pytest.fixture(scope="session")
def tiny_sandbox(tiny_sandbox_build) -> Path:
    """The folder of the session's tiny sandbox (see `tiny_sandbox_build`)."""
    return tiny_sandbox_build[0].root


def seed_tiny_sandbox(built: Path, home: Path) -> None:
    """Copy the session's built tiny sandbox into `home`'s sandbox folder (the sandbox is position-free)."""
    import shutil

    shutil.copytree(built, home / "sandbox" / built.name)


def byte_level_bpe(texts, vocab_size: int):
    """A GPT-2-style byte-level BPE trained on `texts` (tokenizers.Tokenizer), with <|endoftext|> as id 0."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  special_tokens=["<|endoftext|>"], show_progress=False)
    tok.train_from_iterator(texts, trainer)
    return tok


@pytest.fixture(scope="session")
def mini_stack(tmp_path_factory):
    """A small real stack for pipeline tests: stdlib text corpus with domains, a BPE tokenizer saved as a
    transformers folder, its infini-gram index, and a randomly initialised 1-layer GPT-2 (real weights,
    real generation; nothing is memorized, which these tests do not need)."""
    import json
    import os as _os

    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    from ingest.index import build_index

    root = tmp_path_factory.mktemp("mini")
    files = sorted(Path(_os.__file__).parent.glob("*.py"))[:30]
    texts = [f.read_text(encoding="utf-8", errors="replace")[:4000] for f in files]
    docs = [{"text": t, "id": f"py-{i}", "domain": "code", "source": files[i].name} for i, t in enumerate(texts)]
    docs += [{"text": "The cat sat on the mat. " * 8, "id": "cat", "domain": "prose", "source": "hand"}]
    (root / "corpus").mkdir()
    with open(root / "corpus" / "docs.jsonl", "w") as fh:
        for d in docs:
            fh.write(json.dumps(d) + "\n")
    tok = byte_level_bpe([d["text"] for d in docs], 600)
    model_dir = root / "model"
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|endoftext|>", eos_token="<|endoftext|>",
                                   pad_token="<|endoftext|>")
    fast.save_pretrained(model_dir)
    torch.manual_seed(0)
    cfg = GPT2Config(vocab_size=tok.get_vocab_size(), n_positions=128, n_embd=32, n_layer=1, n_head=2,
                     bos_token_id=0, eos_token_id=0)
    GPT2LMHeadModel(cfg).save_pretrained(model_dir)
    index_dir = root / "index"
    build_index([root / "corpus"], str(model_dir / "tokenizer.json"), index_dir, progress=False)
    return {"root": root, "model": model_dir, "index": index_dir, "docs": docs}
