"""The papers' model architectures with their families' real tokenizers, through generation and scoring
(issue 29 item 3): tiny random-weight Llama, OLMo-2, GPT-NeoX and GPT-2 models saved as Hugging Face folders,
each with a tokenizer rebuilt from llama.cpp's GGUF vocabulary (ingest/vocabs/, checked against llama.cpp's
expected ids in test_real_vocabs.py).

Oracles: the tokenizer file itself for the prompt ids; a greedy loop that recomputes the whole sequence at every
step (no KV cache) for the hf backend's cached generation, whose cache argument differs between architectures;
one unpadded forward pass per text for the scorer's padded batches; a reload for the classifier fine-tuned on an
encoder with Llama-2's tokenizer (which has no pad token).
"""

from __future__ import annotations

import pytest

# architecture -> (transformers config class, its size arguments, vocabulary, the family's BOS and EOS ids)
ARCHITECTURES = {
    "llama": ("LlamaConfig", {"hidden_size": 16, "intermediate_size": 32, "num_attention_heads": 2,
                              "num_key_value_heads": 1}, "llama-spm", 1, 2),
    "olmo2": ("Olmo2Config", {"hidden_size": 16, "intermediate_size": 32, "num_attention_heads": 2,
                              "num_key_value_heads": 2}, "gpt-neox", 0, 0),  # OLMo-1's tokenizer
    "gpt_neox": ("GPTNeoXConfig", {"hidden_size": 16, "intermediate_size": 32, "num_attention_heads": 2},
                 "gpt-neox", 0, 0),
    "gpt2": ("GPT2Config", {"n_embd": 16, "n_head": 2, "n_positions": 128}, "gpt-2", 50256, 50256),
}
TEXTS = ["def main(argv):\n    return 0", "The quick brown fox jumps over the lazy dog, twice."]


# vLLM's CPU attention has kernels for some head sizes only (8 fails: docs/footguns.md), so its models are wider
VLLM_SIZES = {"llama": {"hidden_size": 64, "intermediate_size": 128}, "olmo2": {"hidden_size": 64, "intermediate_size": 128},
              "gpt_neox": {"hidden_size": 64, "intermediate_size": 128}, "gpt2": {"n_embd": 64}}


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    return _build_models(tmp_path_factory.mktemp("arch"), wide=False)


def _build_models(root, wide: bool) -> dict:
    import shutil

    import torch
    import transformers

    from ingest.errors import UserError
    from ingest.vocabs import gguf, llamacpp

    try:
        cache = llamacpp.fetch(names=("llama-spm", "gpt-neox", "gpt-2"))
    except UserError as e:
        pytest.skip(f"the real vocabularies could not be fetched: {e}")
    toks = {n: gguf.save_tokenizer_folder(cache / f"ggml-vocab-{n}.gguf", root / f"tok-{n}")
            for n in ("llama-spm", "gpt-neox", "gpt-2")}
    out = {}
    for arch, (cfg_name, size, vocab, bos, eos) in ARCHITECTURES.items():
        from tokenizers import Tokenizer

        n_vocab = Tokenizer.from_file(str(toks[vocab] / "tokenizer.json")).get_vocab_size()
        extra = {} if arch == "gpt2" else {"max_position_embeddings": 128}
        layers = {"n_layer": 1} if arch == "gpt2" else {"num_hidden_layers": 1}
        size = {**size, **VLLM_SIZES[arch]} if wide else size
        cfg = getattr(transformers, cfg_name)(vocab_size=n_vocab, bos_token_id=bos, eos_token_id=eos, **size,
                                              **layers, **extra)
        torch.manual_seed(0)
        model = transformers.AutoModelForCausalLM.from_config(cfg)
        folder = root / arch
        model.save_pretrained(folder)
        for f in toks[vocab].iterdir():
            shutil.copy(f, folder / f.name)
        out[arch] = folder
    return out


@pytest.mark.slow
@pytest.mark.parametrize("arch", list(ARCHITECTURES))
def test_prompts_are_the_models_own_ids_and_cached_generation_is_exact(models, arch):
    import torch
    from tokenizers import Tokenizer

    from ingest.generate.backends import GenRequest, HFBackend, SamplingConfig

    _, _, _, bos, eos = ARCHITECTURES[arch]
    backend = HFBackend(str(models[arch]), batch_size=4)
    real = Tokenizer.from_file(str(models[arch] / "tokenizer.json"))
    for text in TEXTS:
        assert backend.encode(text) == real.encode(text, add_special_tokens=False).ids
    assert (backend.bos_id, backend.eos_id) == (bos, eos)
    assert not getattr(backend.tok, "chat_template", None)

    prompts = [(bos, *backend.encode(t)) for t in TEXTS]
    reqs = [GenRequest(f"g{i}", p, seed=i) for i, p in enumerate(prompts)]
    got = backend.generate(reqs, SamplingConfig(temperature=0, top_p=1.0, max_new_tokens=6))
    for req, out in zip(reqs, got):
        ids, want = list(req.prompt_ids), []
        with torch.inference_mode():  # the oracle: the whole sequence again at every step, no cache
            for _ in range(6):
                nxt = int(backend.model(input_ids=torch.tensor([ids])).logits[0, -1].argmax())
                if nxt == eos:
                    break
                want.append(nxt)
                ids.append(nxt)
        assert list(out.token_ids) == want, arch


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["llama", "gpt_neox"])
def test_scorer_batches_texts_of_different_lengths_exactly(models, arch):
    import torch

    from ingest.score.logprobs import HFScorer

    scorer = HFScorer(str(models[arch]), batch_size=2, start_token=True)
    batched = scorer.score(TEXTS)
    for text, got in zip(TEXTS, batched):
        ids, _ = scorer.encode(text)
        with torch.inference_mode():
            logp = torch.log_softmax(scorer.model(input_ids=torch.tensor([ids])).logits[0, :-1].float(), -1)
        want = logp.gather(-1, torch.tensor(ids[1:]).unsqueeze(-1)).squeeze(-1).tolist()
        assert got.logprobs == pytest.approx(want, abs=1e-4), arch


@pytest.mark.slow
def test_classifier_fine_tunes_a_checkpoint_with_llama2s_tokenizer(models, tmp_path):
    """`classify train --backend transformer --checkpoint` on an encoder whose tokenizer is Llama-2's (no pad token,
    SentencePiece with byte fallback): it trains, and the saved classifier reloads to the same posteriors."""
    import shutil

    import numpy as np
    import torch
    from transformers import AutoTokenizer, DistilBertConfig, DistilBertForSequenceClassification

    from ingest.classify import load_classifier, train_classifier
    from ingest.lake import Lake
    from ingest.references import import_references
    from test_classify import local_corpus, write_refs

    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    for name in ("tokenizer.json", "tokenizer_config.json", "lmaudit_gguf.json"):
        shutil.copy(models["llama"] / name, ckpt / name)
    tok = AutoTokenizer.from_pretrained(str(ckpt))
    assert tok.pad_token is None  # Llama-2 has none: the backend must cope
    torch.manual_seed(0)
    DistilBertForSequenceClassification(DistilBertConfig(
        vocab_size=len(tok), max_position_embeddings=64, dim=16, n_layers=1, n_heads=2, hidden_dim=32,
        num_labels=2, pad_token_id=0)).save_pretrained(ckpt)
    corpus = local_corpus(per_domain=10, chars=200)
    lake = Lake(tmp_path / "w")
    import_references(lake, write_refs(tmp_path / "refs.jsonl", corpus, n=8, plant=False), folds=2)
    s = train_classifier(lake, backend="transformer", name="llama-tok", progress=False,
                         params={"checkpoint": str(ckpt), "epochs": 1, "lr": 1e-3, "max_len": 32, "batch_size": 8})
    assert s.n_docs == 24 and s.folds == 2
    texts = [t for ts in corpus.values() for t in ts[8:]]
    clf = load_classifier(lake, "llama-tok")
    p = clf.posteriors(texts)
    assert p.shape == (len(texts), 3) and np.allclose(p.sum(axis=1), 1.0)
    np.testing.assert_allclose(load_classifier(lake, "llama-tok").posteriors(texts), p, atol=1e-6)


# Run in the vLLM interpreter: every architecture in one process (one vLLM import), each through the vllm backend.
VLLM_PROBE = """
import gc, json, sys

from ingest.generate.backends import GenRequest, SamplingConfig, VLLMBackend


def main():
    out = {}
    for arch, folder in json.loads(sys.argv[1]).items():
        try:
            be = VLLMBackend(folder, dtype="float32", gpu_memory_utilization=0.05, max_model_len=128)
        except Exception as e:  # noqa: BLE001 - reported per architecture, the test skips with it
            out[arch] = {"error": f"{type(e).__name__}: {e}"}
            continue
        engine_tok = be.llm.get_tokenizer()
        texts = json.loads(sys.argv[2])
        prompts = [[be.bos_id, *be.encode(t)] for t in texts]
        outs = be.generate([GenRequest(f"g{i}", tuple(p), seed=i) for i, p in enumerate(prompts)],
                           SamplingConfig(temperature=0, top_p=1.0, max_new_tokens=6))
        out[arch] = {"ids": [be.encode(t) for t in texts], "bos": be.bos_id, "eos": be.tok.eos_token_id,
                     "pad": be.tok.pad_token_id, "engine_eos": engine_tok.eos_token_id,
                     "engine_pad": engine_tok.pad_token_id, "template": getattr(engine_tok, "chat_template", None),
                     "prompts": prompts, "outs": [list(o.token_ids) for o in outs]}
        del be, engine_tok
        gc.collect()
    print("RESULT " + json.dumps(out))


if __name__ == "__main__":
    main()
"""


@pytest.fixture(scope="module")
def vllm_runs(tmp_path_factory):
    import json
    import os
    import subprocess

    from conftest import REPO

    python = os.environ.get("LMAUDIT_VLLM_PYTHON")
    if not python:
        pytest.skip("set LMAUDIT_VLLM_PYTHON to a Python with vLLM installed")
    root = tmp_path_factory.mktemp("arch-vllm")
    folders = _build_models(root, wide=True)
    (root / "probe.py").write_text(VLLM_PROBE)
    proc = subprocess.run([python, str(root / "probe.py"), json.dumps({a: str(f) for a, f in folders.items()}),
                           json.dumps(TEXTS)], capture_output=True, text=True, cwd=REPO, timeout=1800,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
    assert proc.returncode == 0 and line, proc.stdout[-3000:] + proc.stderr[-3000:]
    return folders, json.loads(line[len("RESULT "):])


@pytest.mark.slow
@pytest.mark.parametrize("arch", list(ARCHITECTURES))
def test_vllm_on_cpu_generates_from_the_models_own_ids(vllm_runs, arch):
    """vLLM on CPU (opt-in, LMAUDIT_VLLM_PYTHON) with each architecture and its family's real tokenizer: the prompt
    ids are the tokenizer file's, BOS/EOS/pad the family's in the backend and in the engine, no chat template, and
    the greedy continuation is greedy under the model (oracle: transformers recomputing the whole sequence)."""
    import torch
    import transformers
    from tokenizers import Tokenizer

    folders, runs = vllm_runs
    got = runs[arch]
    if "error" in got:
        pytest.skip(f"vLLM on CPU cannot run {arch}: {got['error'][:300]}")
    _, _, _, bos, eos = ARCHITECTURES[arch]
    real = Tokenizer.from_file(str(folders[arch] / "tokenizer.json"))
    assert got["ids"] == [real.encode(t, add_special_tokens=False).ids for t in TEXTS]
    assert got["prompts"] == [[bos, *ids] for ids in got["ids"]]
    pad = transformers.AutoTokenizer.from_pretrained(str(folders[arch])).pad_token_id
    assert (got["bos"], got["eos"], got["engine_eos"]) == (bos, eos, eos)
    assert got["pad"] == got["engine_pad"] == pad
    assert not got["template"]
    model = transformers.AutoModelForCausalLM.from_pretrained(str(folders[arch]), dtype=torch.float32).eval()
    for prompt, new in zip(got["prompts"], got["outs"]):
        assert 1 <= len(new) <= 6 and eos not in new
        ids = list(prompt)
        for t in new:  # each step's token is the argmax of the model's logits, up to float32 kernel differences
            with torch.inference_mode():
                logits = model(input_ids=torch.tensor([ids])).logits[0, -1].float()
            assert float(logits.max() - logits[t]) < 1e-4, (arch, t, int(logits.argmax()))
            ids.append(t)
