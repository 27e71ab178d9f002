"""A second index of the sandbox corpus, tokenized the way the public infini-gram indexes are (Llama-2 style),
while the sandbox model keeps its own byte-level tokenizer.

Why: PropMe traces OLMo / Pythia / Comma models against Llama-2-tokenized indexes, so the model's tokenizer
and the index's differ. The ordinary sandbox hides every bug of that configuration (model and index share
one tokenizer). This module trains, on the same corpus, a tokenizer with Llama-2's conventions:

* BPE with **byte fallback**: ids 3..258 are the byte tokens ``<0x00>`` .. ``<0xFF>``; a character the
  vocabulary lacks is spelled as its UTF-8 bytes, so every text encodes and decodes exactly;
* **Metaspace word starts**: the normalizer writes ``▁`` (U+2581) for each space and prepends one to the
  text (``"a cat"`` -> ``▁a▁cat``); the decoder turns ``▁`` back into spaces and strips the one it added;
* special tokens ``<unk>`` = 0, ``<s>`` = 1, ``</s>`` = 2 (never added while indexing);
* ids fit u16, like Llama-2's 32,000.

Two stages live beside the sandbox's own: ``<sandbox>/tokenizer-llama-style`` and ``<sandbox>/index-llama-style``
(the index manifest names the tokenizer's final path, so the tokenizer is a stage of its own), cached by a key
over the corpus and these knobs, and built by the same `build_index` as any corpus.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

METASPACE = "\u2581"
SPECIALS = ("<unk>", "<s>", "</s>")
BYTE_TOKENS = tuple(f"<0x{b:02X}>" for b in range(256))
TOKENIZER_STAGE = "tokenizer-llama-style"
INDEX_STAGE = "index-llama-style"
VERSION = 1


def train_llama_style(texts, vocab_size: int, min_frequency: int = 2):
    """A `tokenizers.Tokenizer` with Llama-2's layout (see the module docstring), trained on `texts`."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    def fresh(model):
        tok = Tokenizer(model)
        tok.normalizer = normalizers.Sequence([normalizers.Prepend(METASPACE), normalizers.Replace(" ", METASPACE)])
        tok.decoder = decoders.Sequence([decoders.Replace(METASPACE, " "), decoders.ByteFallback(), decoders.Fuse(),
                                         decoders.Strip(" ", 1, 0)])
        return tok

    # trained as SentencePiece does: words split before each space, the space kept as the word's leading
    # `▁`, so no learned token crosses a word start; encoding then needs no pre-tokenizer (as Llama-2's file)
    learner = Tokenizer(models.BPE(unk_token="<unk>"))
    learner.pre_tokenizer = pre_tokenizers.Metaspace(replacement=METASPACE, prepend_scheme="always", split=True)
    n_fixed = len(SPECIALS) + len(BYTE_TOKENS)
    trainer = trainers.BpeTrainer(vocab_size=max(vocab_size - len(BYTE_TOKENS), len(SPECIALS) + 64),
                                  min_frequency=min_frequency, special_tokens=list(SPECIALS), show_progress=False,
                                  limit_alphabet=200)
    learner.train_from_iterator(texts, trainer=trainer)
    learned = json.loads(learner.to_str())["model"]
    # renumber: specials, the 256 byte tokens, then the learned symbols and merges in their learned order
    vocab = {t: i for i, t in enumerate(SPECIALS + BYTE_TOKENS)}
    for t, _ in sorted(learned["vocab"].items(), key=lambda kv: kv[1]):
        if t not in vocab:
            vocab[t] = len(vocab)
    merges = [tuple(m.split(" ", 1)) if isinstance(m, str) else tuple(m) for m in learned["merges"]]
    tok = fresh(models.BPE(vocab=vocab, merges=merges, unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    tok.add_special_tokens(list(SPECIALS))
    assert len(vocab) >= n_fixed and vocab["<0x00>"] == len(SPECIALS)
    return tok


def save_llama_style(tok, out_dir: Path) -> Path:
    """`tokenizer.json` plus the transformers files (bos `<s>`, eos `</s>`, unk `<unk>`), as Llama-2 ships."""
    from transformers import PreTrainedTokenizerFast

    out_dir.mkdir(parents=True, exist_ok=True)
    tok.save(str(out_dir / "tokenizer.json"))
    PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>",
                            clean_up_tokenization_spaces=False).save_pretrained(out_dir)
    return out_dir / "tokenizer.json"


def stage_key(paths) -> str:
    """The cache key of the llama-style index: the corpus stage's key, the vocabulary knobs, this code."""
    from importlib.metadata import version

    blob = {"v": VERSION, "corpus": paths.keys["corpus"], "vocab": paths.size.vocab_size,
            "min_frequency": paths.size.min_frequency, "tokenizers": version("tokenizers")}
    return hashlib.sha256(json.dumps(blob, sort_keys=True).encode()).hexdigest()[:20]


def build_llama_style_index(paths, progress: bool = True) -> Path:
    """Build (or reuse) the llama-style tokenizer and index of a built sandbox; returns the index folder."""
    from ingest.index.build import build_index
    from ingest.sandbox.corpus import read_corpus
    from ingest.sandbox.stages import locked, run_stage

    tok_dir = paths.root / TOKENIZER_STAGE

    def tokenizer_stage(tmp: Path) -> None:
        texts = [d.text for d in read_corpus(paths.corpus_jsonl)]
        tok = train_llama_style(texts, paths.size.vocab_size, paths.size.min_frequency)
        bad = [i for i, t in enumerate(texts) if tok.decode(tok.encode(t, add_special_tokens=False).ids) != t]
        if bad:
            raise RuntimeError(f"llama-style tokenizer round trip failed on {len(bad)} documents (first: #{bad[0]})")
        save_llama_style(tok, tmp)

    def index_stage(tmp: Path) -> None:
        build_index([str(paths.corpus_jsonl)], str(tok_dir / "tokenizer.json"), tmp, shards=1, overwrite=True,
                    progress=False)

    key = stage_key(paths)
    with locked(paths.root):
        run_stage(paths.root, TOKENIZER_STAGE, key, {"corpus": paths.keys["corpus"]}, tokenizer_stage)
        run_stage(paths.root, INDEX_STAGE, key, {"tokenizer": key}, index_stage)
    return paths.root / INDEX_STAGE
