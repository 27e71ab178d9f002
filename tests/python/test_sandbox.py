"""The offline sandbox: corpus, tokenizer, tiny GPT-2 and the build cache.

The `tiny` sandbox is built once per test session (conftest's `tiny_sandbox_build`, ~1 minute on 2 cores);
the other tests are cheap.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from ingest.sandbox import (
    CANARY_DOMAIN,
    EOS_ID,
    EOS_TOKEN,
    SIZES,
    build_sandbox,
    collect_corpus,
    get_size,
    load_tokenizer,
    make_canary,
    read_corpus,
    round_trip_failures,
    stage_keys,
    train_tokenizer,
)
from ingest.sandbox.indexing import sandbox_index_builder
from ingest.sandbox.stages import run_stage

REPO = Path(__file__).resolve().parents[2]


def _digests(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != ".lock"
    }


# ------------------------------------------------------------------------------------------------
# the tiny sandbox, built once


@pytest.fixture(scope="module")
def tiny(tiny_sandbox_build):
    """conftest's session build (with the sandbox's index, as `lmaudit sandbox build` makes it): read-only here,
    since the demo tests copy it; tests that rebuild work on a copy."""
    return tiny_sandbox_build


@pytest.mark.slow
def test_tiny_build_layout(tiny):
    sb, seconds = tiny
    assert sb.built == ("corpus", "tokenizer", "index", "model")  # from nothing: every stage ran, in order
    assert sb.index_dir == sb.root / "index" and (sb.index_dir / "lmaudit-index.json").is_file()
    for p in (sb.corpus_jsonl, sb.mixture_json, sb.tokenizer_json, sb.train_log, sb.model_dir / "model.safetensors"):
        assert p.is_file(), p
    for stage in ("corpus", "tokenizer", "index", "model"):
        stamp = json.loads((sb.root / stage / "done.json").read_text())
        assert stamp["key"] == sb.keys[stage]
    assert not [p for p in sb.root.iterdir() if ".tmp-" in p.name or ".old-" in p.name]
    log = json.loads(sb.train_log.read_text())
    assert log["steps"] == SIZES["tiny"].steps and log["final_loss"] < 5.0
    print(f"tiny sandbox built in {seconds:.1f}s; training {log['seconds']:.1f}s at {log['tokens_per_s']:.0f} tok/s")


@pytest.mark.slow
def test_corpus_domains_and_documents(tiny):
    sb, _ = tiny
    docs = list(read_corpus(sb.corpus_jsonl))
    domains = Counter(d.domain for d in docs)
    real = set(domains) - {CANARY_DOMAIN}
    assert len(real) >= 3 and {"code", "boilerplate", "documentation"} <= real
    assert domains[CANARY_DOMAIN] == SIZES["tiny"].canary_copies
    assert len({d.id for d in docs}) == len(docs)
    assert all(d.text.strip() and EOS_TOKEN not in d.text for d in docs)
    assert all(d.id.startswith(d.domain + "/") for d in docs)
    canaries = {d.text for d in docs if d.domain == CANARY_DOMAIN}
    assert canaries == {sb.canary_text} == {make_canary(0)}
    # the canary's words occur nowhere else
    probe = " ".join(sb.canary_text.split()[1:4])
    assert not any(probe in d.text for d in docs if d.domain != CANARY_DOMAIN)
    # shuffled: the canaries are spread out, not one block
    positions = [i for i, d in enumerate(docs) if d.domain == CANARY_DOMAIN]
    assert positions[-1] - positions[0] > len(docs) // 2


@pytest.mark.slow
def test_mixture_is_exact(tiny):
    sb, _ = tiny
    mix = json.loads(sb.mixture_json.read_text())
    docs = list(read_corpus(sb.corpus_jsonl))
    tok = load_tokenizer(sb.tokenizer_dir)
    want_docs, want_bytes, want_tokens = Counter(), Counter(), Counter()
    for d in docs:
        want_docs[d.domain] += 1
        want_bytes[d.domain] += len(d.text.encode("utf-8"))
        want_tokens[d.domain] += len(tok.encode(d.text, add_special_tokens=False).ids)
    assert set(mix["domains"]) == set(want_docs)
    for dom, m in mix["domains"].items():
        assert (m["docs"], m["bytes"], m["tokens"]) == (want_docs[dom], want_bytes[dom], want_tokens[dom])
    for field in ("docs", "bytes", "tokens"):
        assert mix["total"][field] == sum(m[field] for m in mix["domains"].values())
    assert mix["total"]["separator_tokens"] == len(docs) + 1
    assert mix["canary"]["tokens"] * mix["canary"]["copies"] == mix["domains"][CANARY_DOMAIN]["tokens"]
    for dom, budget in mix["budgets"].items():
        if dom in mix["domains"]:
            assert 0.9 * budget <= mix["domains"][dom]["bytes"] <= budget
    assert mix["tokenizer"]["key"] == sb.keys["tokenizer"]


@pytest.mark.slow
def test_tokenizer_round_trips_the_corpus(tiny):
    from transformers import AutoTokenizer

    sb, _ = tiny
    texts = [d.text for d in read_corpus(sb.corpus_jsonl)]
    tok = load_tokenizer(sb.tokenizer_dir)
    assert tok.token_to_id(EOS_TOKEN) == EOS_ID == 0
    assert round_trip_failures(tok, texts) == []
    for folder in (sb.tokenizer_dir, sb.model_dir):
        hf = AutoTokenizer.from_pretrained(str(folder))
        assert hf.eos_token_id == hf.bos_token_id == hf.pad_token_id == EOS_ID
        for t in texts[:60] + ["a = f( x ) ; b . c !\n", " def __init__(self):"]:
            assert hf.decode(hf(t, add_special_tokens=False)["input_ids"]) == t
    assert AutoTokenizer.from_pretrained(str(sb.model_dir)).model_max_length == SIZES["tiny"].context


@pytest.mark.slow
def test_model_loads_like_a_hub_model_and_memorized_the_canary(tiny):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    sb, _ = tiny
    size = SIZES["tiny"]
    model = AutoModelForCausalLM.from_pretrained(str(sb.model_dir)).eval()
    tok = AutoTokenizer.from_pretrained(str(sb.model_dir))
    cfg = model.config
    shape = (cfg.n_layer, cfg.n_embd, cfg.n_positions, cfg.vocab_size)
    assert shape == (size.n_layer, size.n_embd, size.context, size.vocab_size)
    assert cfg.eos_token_id == cfg.bos_token_id == model.generation_config.eos_token_id == EOS_ID

    ids = tok(sb.canary_text, add_special_tokens=False)["input_ids"]
    assert len(ids) >= 70
    prompt = torch.tensor([[EOS_ID] + ids[:20]])
    with torch.no_grad():
        out = model.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=50, do_sample=False)
    got = out[0, prompt.shape[1] :].tolist()
    match = next((i for i, (a, b) in enumerate(zip(got, ids[20:70])) if a != b), 50)
    assert match >= 50, f"canary reproduced for {match} tokens only: {tok.decode(got)!r}"


@pytest.mark.slow
def test_second_build_is_a_cache_hit(tiny):
    sb, _ = tiny
    before = _digests(sb.root)
    t0 = time.perf_counter()
    again = build_sandbox("tiny", sb.root, seed=0, index_builder=sandbox_index_builder, progress=False)
    assert time.perf_counter() - t0 < 5
    assert again.built == ()
    assert again.keys == sb.keys
    assert _digests(sb.root) == before


@pytest.mark.slow
def test_changed_step_budget_rebuilds_only_the_model_and_training_is_deterministic(tiny, tmp_path):
    sb, _ = tiny
    short = get_size("tiny").replace(steps=3)
    copies = []
    for name in ("a", "b"):
        root = tmp_path / name
        shutil.copytree(sb.root, root)
        before = _digests(root)
        again = build_sandbox(short, root, seed=0, progress=False)
        assert again.built == ("model",)
        after = _digests(root)
        for f, digest in before.items():
            if not f.startswith("model/"):
                assert after[f] == digest, f
        assert after["model/model.safetensors"] != before["model/model.safetensors"]
        copies.append({f: d for f, d in after.items() if f != "model/train_log.json"})  # it holds timings
    assert copies[0] == copies[1]


@pytest.mark.slow
def test_index_stage_runs_the_callback_once(tiny, tmp_path):
    sb, _ = tiny
    root = tmp_path / "copy"
    shutil.copytree(sb.root, root)
    calls = []

    def index_builder(corpus_jsonl: Path, tokenizer_dir: Path, out_dir: Path) -> None:
        calls.append((corpus_jsonl, tokenizer_dir))
        assert (tokenizer_dir / "tokenizer.json").is_file() and corpus_jsonl.is_file()
        (out_dir / "docs.count").write_text(str(sum(1 for _ in read_corpus(corpus_jsonl))))

    first = build_sandbox("tiny", root, seed=0, index_builder=index_builder, progress=False)
    assert first.built == ("index",) and first.index_dir == root / "index"
    assert (root / "index" / "docs.count").read_text() == str(json.loads(sb.mixture_json.read_text())["total"]["docs"])
    again = build_sandbox("tiny", root, seed=0, index_builder=index_builder, progress=False)
    assert again.built == () and len(calls) == 1


# ------------------------------------------------------------------------------------------------
# cheap tests


def test_sizes_registry():
    assert set(SIZES) == {"tiny", "small", "default"}
    t, d = SIZES["tiny"], SIZES["default"]
    assert (t.vocab_size, t.n_layer, t.n_embd, t.context) == (4096, 2, 128, 128)
    assert (d.vocab_size, d.n_layer, d.n_embd, d.context) == (4096, 2, 128, 256)
    assert 500_000 <= sum(d.domain_budgets.values()) <= 1_500_000
    assert get_size(t) is t
    with pytest.raises(Exception):
        get_size("huge")


def test_stage_keys_invalidate_only_downstream():
    base = get_size("tiny")
    k = stage_keys(base)
    steps = stage_keys(base.replace(steps=base.steps + 1))
    vocab = stage_keys(base.replace(vocab_size=2048))
    budget = stage_keys(base.replace(code_bytes=base.code_bytes + 1))
    assert (steps["corpus"], steps["tokenizer"]) == (k["corpus"], k["tokenizer"]) and steps["model"] != k["model"]
    assert vocab["corpus"] == k["corpus"] and vocab["tokenizer"] != k["tokenizer"] and vocab["model"] != k["model"]
    assert all(budget[s] != k[s] for s in k)
    assert stage_keys(base) == k
    with_index = stage_keys(base, index_builder=lambda c, t, o: None)
    assert "index" in with_index and with_index["model"] == k["model"]


def test_canary_is_seeded_nonsense():
    a, b = make_canary(0), make_canary(1)
    assert a == make_canary(0) and a != b
    assert 900 <= len(a.encode()) <= 950 and a.endswith(".\n")


def test_interrupted_stage_leaves_nothing(tmp_path):
    def boom(tmp: Path) -> None:
        (tmp / "half.bin").write_bytes(b"x")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_stage(tmp_path, "stage", "k1", {}, boom)
    assert list(tmp_path.iterdir()) == []
    assert run_stage(tmp_path, "stage", "k1", {}, lambda tmp: (tmp / "ok").write_text("1")) is True
    assert run_stage(tmp_path, "stage", "k1", {}, boom) is False  # cache hit: builder not called
    assert sorted(p.name for p in (tmp_path / "stage").iterdir()) == ["done.json", "ok"]


_CORPUS_AND_TOKENIZER = """
import sys
from pathlib import Path
from ingest.sandbox import collect_corpus, train_tokenizer
out = Path(sys.argv[1])
collect_corpus("tiny", out / "corpus", seed=0)
train_tokenizer(out / "corpus" / "corpus.jsonl", out / "tokenizer", vocab_size=4096)
"""


@pytest.mark.slow
def test_corpus_and_tokenizer_are_deterministic(tmp_path):
    """Two builds (one in a fresh interpreter with another hash seed) give identical bytes."""
    a, b = tmp_path / "a", tmp_path / "b"
    collect_corpus("tiny", a / "corpus", seed=0)
    train_tokenizer(a / "corpus" / "corpus.jsonl", a / "tokenizer", vocab_size=4096)
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    subprocess.run([sys.executable, "-c", _CORPUS_AND_TOKENIZER, str(b)], check=True, cwd=REPO, env=env)
    da, db = _digests(a), _digests(b)
    assert set(da) >= {"corpus/corpus.jsonl", "corpus/mixture.json", "tokenizer/tokenizer.json"}
    assert da == db
    # and a different seed gives a different canary and order, but the same real documents
    collect_corpus("tiny", tmp_path / "c", seed=1)
    ids = lambda p: sorted(d.id for d in read_corpus(p) if d.domain != CANARY_DOMAIN)  # noqa: E731
    assert ids(a / "corpus" / "corpus.jsonl") == ids(tmp_path / "c" / "corpus.jsonl")
