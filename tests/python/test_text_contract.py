"""Text is the contract between a model and the index: a model whose tokenizer is not the index's receives its
own ids for every prompt, the tracer measures the generation in the index's tokens, and the prefix setting
cuts documents at character boundaries whatever the tokenizer's word-start convention."""

from __future__ import annotations

import hashlib

import pytest

from ingest.corpora import corpus_id_for, register_corpus
from ingest.generate.backends import SamplingConfig, get_backend
from ingest.generate.plan import prompt_units
from ingest.generate.runner import RunSpec, run_generation
from ingest.index.tokenizer import load_tokenizer
from ingest.lake import Lake
from ingest.prompts.settings import split_prefix

from conftest import byte_level_bpe


def llama_style_bpe(texts, vocab_size: int):
    """A Llama-2-style tokenizer: BPE with byte fallback, `▁` word starts, <unk> <s> </s>."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True))
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first")
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
                                     decoders.Strip(" ", 1, 0)])
    bytes_ = [f"<0x{b:02X}>" for b in range(256)]
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["<unk>", "<s>", "</s>", *bytes_],
                                  show_progress=False)
    tok.train_from_iterator(texts, trainer)
    return tok


@pytest.fixture(scope="module")
def other_model(mini_stack, tmp_path_factory):
    """A randomly initialised GPT-2 whose tokenizer (Llama-style) differs on purpose from the index's."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    tok = llama_style_bpe([d["text"] for d in mini_stack["docs"]], 700)
    folder = tmp_path_factory.mktemp("other") / "model"
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>")
    fast.save_pretrained(folder)
    torch.manual_seed(1)
    cfg = GPT2Config(vocab_size=tok.get_vocab_size(), n_positions=256, n_embd=32, n_layer=1, n_head=2,
                     bos_token_id=1, eos_token_id=2)
    GPT2LMHeadModel(cfg).save_pretrained(folder)
    return folder


def test_a_model_receives_its_own_ids_and_the_index_its_own(mini_stack, other_model, home) -> None:
    from transformers import AutoTokenizer

    from ingest.prompts.build import build_prompt_set
    from ingest.trace.params import TraceParams
    from ingest.trace.run import TraceJob, trace_generations

    lake = Lake(home)
    register_corpus(lake, "mini", [mini_stack["index"]])
    index_tok = load_tokenizer(str(mini_stack["model"] / "tokenizer.json"))
    model_tok = AutoTokenizer.from_pretrained(other_model)
    for setting in ("minimal_cue", "prefix"):
        build_prompt_set(lake, "mini", setting, n=6)

    be = get_backend("hf", str(other_model), batch_size=8)
    seen: list[tuple[int, ...]] = []
    real_generate = be.generate

    def spy(requests, sampling):
        seen.extend(r.prompt_ids for r in requests)
        return real_generate(requests, sampling)

    be.generate = spy
    prompts = {r["prompt_id"]: r for r in lake.read("prompts").to_pylist()}
    differs = 0
    for setting in ("minimal_cue", "prefix"):
        units = prompt_units(lake, "mini", setting, be, n_samples=1, n_generations=1)
        for u in units:
            text = prompts[u.prompt_id]["text"]
            own = (model_tok.bos_token_id, *model_tok.encode(text, add_special_tokens=False))
            assert u.token_ids == own  # the model's own tokenizer, its own start token
            differs += list(u.token_ids[1:]) != list(prompts[u.prompt_id]["token_ids"])
        spec = RunSpec(f"other-{setting}", str(other_model), setting, "hf", corpus_id_for("mini"),
                       SamplingConfig(max_new_tokens=40))
        run_generation(lake, be, spec, units, progress=False)
    assert differs >= 10  # the two tokenizers really differ on these prompts
    assert seen and all(s[0] == model_tok.bos_token_id for s in seen)
    assert lake.read("runs").to_pylist()[0]["tokenizer"] == str(other_model)

    gens = lake.read("generations").to_pylist()
    job = TraceJob((str(mini_stack["index"]),), TraceParams())
    trace_generations(lake, job, [(g["generation_id"], g["text"]) for g in gens], "run:other",
                      corpus_id=corpus_id_for("mini"), progress=False)
    traced = {r["generation_id"]: r for r in lake.read("traced_generations").to_pylist()}
    assert set(traced) == {g["generation_id"] for g in gens}
    model_len_differs = 0
    for g in gens:
        t = traced[g["generation_id"]]
        assert t["n_index_tokens"] == len(index_tok.encode(g["text"]))  # lengths in the index's tokens
        assert t["text_hash"] == hashlib.md5(g["text"].encode()).hexdigest()
        model_len_differs += t["n_index_tokens"] != g["n_tokens"]
    assert model_len_differs > 0
    for s in lake.read("spans").to_pylist():  # span offsets index the index tokenization of the text
        ids = index_tok.encode(next(g["text"] for g in gens if g["generation_id"] == s["generation_id"]))
        assert 0 <= s["start_tok"] < s["end_tok"] <= len(ids)


@pytest.mark.parametrize("kind", ["byte_level", "metaspace"])
def test_prefix_cut_keeps_every_character(kind) -> None:
    """Prompt + continuation is exactly the decoded window; no U+FFFD from a cut inside a character, no
    space lost at a Metaspace word start."""
    texts = ["naïve café — ünïcödé words " * 20, "plain ascii words and more words " * 20, "中文字符 测试 " * 20]
    raw = byte_level_bpe(texts, 300) if kind == "byte_level" else llama_style_bpe(texts, 300)
    doc = "The café serves naïve ünïcödé food; 中文 测试 plain words follow here and there."
    ids = raw.encode(doc, add_special_tokens=False).ids
    assert len(ids) > 20
    dec = _Dec(raw)
    whole = dec.decode(ids)
    assert kind == "byte_level" or "<0x" not in whole  # byte-fallback pieces decode to their bytes
    cuts = 0
    for k in range(1, len(ids)):
        p, c = ids[:k], ids[k:]
        prompt, truth = split_prefix(dec, p, c)
        assert prompt + truth == whole.rstrip("\ufffd")
        assert "\ufffd" not in prompt
        assert prompt == dec.decode(p)[:len(prompt)]
        cuts += dec.decode(p).endswith("\ufffd") or (kind == "metaspace" and dec.decode(c) != truth)
    assert cuts > 0  # the document really has cuts inside a character (or at a `▁` word start)


class _Dec:
    """The decode method the prompt builders use, over a raw `tokenizers.Tokenizer`."""

    def __init__(self, raw):
        self.raw = raw

    def decode(self, ids):
        return self.raw.decode(list(ids), skip_special_tokens=False)
