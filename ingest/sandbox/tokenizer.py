"""A byte-level BPE tokenizer trained on the sandbox corpus.

* Model: BPE over bytes (GPT-2 style): ``ByteLevel`` pre-tokenizer with ``add_prefix_space=False`` (so
  ``encode(a + b)`` of a document is exactly its text, with no invented leading space), ``ByteLevel``
  decoder, no normalizer: ``decode(encode(text)) == text`` for every UTF-8 text.
* Special token: ``<|endoftext|>`` is **id 0**. It is the model's BOS, EOS and PAD and the document
  separator. Id 0 (rather than the last id) because the last id depends on how many merges the corpus
  yields: on a small corpus BPE can stop short of `vocab_size`, and a fixed id is easier to rely on in SQL
  and in the index.
* The 256 byte symbols are always in the vocabulary (``initial_alphabet``), so any byte string encodes.

Outputs in ``out_dir``: ``tokenizer.json`` (the raw `tokenizers` file) plus a transformers-loadable folder
(``tokenizer_config.json`` etc., written by ``PreTrainedTokenizerFast.save_pretrained``) in the same
directory, so ``AutoTokenizer.from_pretrained(out_dir)`` works. The tokenizer folder sets no
``model_max_length`` (no context: it is a model parameter, and a length there makes transformers warn on
every long document); the model folder's copy sets it to the model's context. ``clean_up_tokenization_spaces`` is off:
with it on, transformers' ``decode`` rewrites ``" ."`` to ``"."`` and breaks the round trip.

Queries against this tokenizer must keep a word's leading space: ``" def"`` and ``"def"`` are different
tokens.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

from ingest.sandbox.corpus import EOS_TOKEN, read_corpus

EOS_ID = 0


@dataclass(frozen=True)
class TokenizerSummary:
    out_dir: Path
    tokenizer_json: Path
    vocab_size: int  # actual size (may be below the requested size on a tiny corpus)
    eos_token: str = EOS_TOKEN
    eos_id: int = EOS_ID


def _texts(corpus_jsonl: Path) -> Iterator[str]:
    for d in read_corpus(corpus_jsonl):
        yield d.text


def build_bpe(texts: Iterable[str], vocab_size: int, min_frequency: int = 2):
    """Train and return a `tokenizers.Tokenizer` (byte-level BPE, ``<|endoftext|>`` = id 0)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=[EOS_TOKEN],  # first special token -> id 0
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    assert tok.token_to_id(EOS_TOKEN) == EOS_ID
    return tok


def save_hf_tokenizer(tok, out_dir: Path, model_max_length: int | None = None) -> None:
    """Write ``tokenizer.json`` and the transformers files (bos = eos = pad = unk = ``<|endoftext|>``)."""
    from transformers import PreTrainedTokenizerFast

    extra = {"model_max_length": model_max_length} if model_max_length else {}
    hf = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=EOS_TOKEN,
        eos_token=EOS_TOKEN,
        pad_token=EOS_TOKEN,
        unk_token=EOS_TOKEN,
        clean_up_tokenization_spaces=False,
        add_prefix_space=False,
        **extra,
    )
    hf.save_pretrained(str(out_dir))


def train_tokenizer(
    corpus_jsonl: Path,
    out_dir: Path,
    vocab_size: int,
    min_frequency: int = 2,
    model_max_length: int | None = None,
) -> TokenizerSummary:
    """Train the BPE on every document of `corpus_jsonl` and save it into `out_dir`."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    tok = build_bpe(_texts(Path(corpus_jsonl)), vocab_size, min_frequency)
    save_hf_tokenizer(tok, out_dir, model_max_length)
    tj = out_dir / "tokenizer.json"
    if not tj.exists():  # pragma: no cover - save_pretrained always writes it today
        tok.save(str(tj))
    return TokenizerSummary(out_dir=out_dir, tokenizer_json=tj, vocab_size=tok.get_vocab_size())


def load_tokenizer(tokenizer_dir_or_json: Path):
    """The raw `tokenizers.Tokenizer` from a folder (its tokenizer.json) or a tokenizer.json path."""
    from tokenizers import Tokenizer

    p = Path(tokenizer_dir_or_json)
    if p.is_dir():
        p = p / "tokenizer.json"
    return Tokenizer.from_file(str(p))


def round_trip_failures(tokenizer, texts: Iterable[str], limit: int = 5) -> list[int]:
    """Indices of texts for which ``decode(encode(text)) != text`` (at most `limit`)."""
    texts = list(texts)
    encs = tokenizer.encode_batch(texts, add_special_tokens=False)
    decs = tokenizer.decode_batch([e.ids for e in encs], skip_special_tokens=False)
    bad = [i for i, (t, d) in enumerate(zip(texts, decs)) if t != d]
    return bad[:limit]
