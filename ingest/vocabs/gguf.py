"""A model family's real tokenizer from a GGUF vocabulary file, as a Hugging Face tokenizer folder.

Why: an audit must index and trace with exactly the ids the audited model sees (Llama-2's SentencePiece
with byte fallback for the Dolma and Pile infini-gram indexes, GPT-NeoX for Pythia and OLMo-1, GPT-2 for
GPT-Neo, StarCoder, Llama-3), and those vocabularies ship without any model hub in llama.cpp's GGUF files
(`ingest/vocabs/llamacpp.py`). transformers can read a GGUF vocabulary, but its conversion is not the
family's tokenizer on every input (measured on llama.cpp's own test texts, transformers 5.19: Llama-2 32
of 47 texts right, StarCoder 46, Llama-3 46, Falcon 38, and MPT/GPT-NeoX not loaded at all), because a GGUF
file stores the vocabulary, the merges and the *name* of the pre-tokenizer (`tokenizer.ggml.pre`), not the
pre-tokenizer itself. This module rebuilds each family's pipeline from that name:

- SentencePiece (`tokenizer.ggml.model = llama`: Llama-2, Mistral v1, Phi-3): a BPE over the pieces with
  byte fallback, merges ranked by the merged piece's score, and the SentencePiece normaliser (a "▁" put in
  front, spaces replaced by "▁") with no pre-tokenizer, as Llama-2's own tokenizer.json;
- byte-level BPE (`gpt2`): the family's split before the byte mapping (GPT-2's regex; StarCoder's single
  digits; Llama-3's regex with merges ignored for whole-word tokens; Falcon's punctuation and digit groups;
  GPT-NeoX/MPT with NFC and its whitespace-run tokens matched first).

`tokenizer_from_gguf` refuses a family it does not know (one line naming the known ones), so a new family is
never silently encoded with another's rules. Every family here is checked against the ids llama.cpp ships
for its test texts (tests/python/test_real_vocabs.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ingest.errors import UserError

# The Llama-3 split (its tokenizer.json's pre_tokenizer), and llama.cpp's names of the byte-level families.
LLAMA3_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                r"|\s*[\r\n]+|\s+(?!\S)|\s+")
BYTE_LEVEL_FAMILIES = ("gpt-2", "gpt-neox", "mpt", "starcoder", "llama-bpe", "falcon")
SENTENCEPIECE_FAMILIES = ("default",)  # llama.cpp's `pre` of a SentencePiece vocabulary

# GGUF token types (llama.cpp's llama_token_type)
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6


@dataclass(frozen=True)
class GgufVocab:
    """The tokenizer fields of one GGUF file."""

    path: Path
    model: str            # tokenizer.ggml.model: "llama" (SentencePiece) or "gpt2" (byte-level BPE)
    family: str           # tokenizer.ggml.pre, or the architecture where the file has none
    tokens: list[str]
    token_types: list[int]
    scores: list[float] | None
    merges: list[str] | None
    bos_id: int | None
    eos_id: int | None
    unk_id: int | None
    add_bos: bool


# GGUF value types (the file format's gguf_type) -> numpy dtype of fixed-size values
_SCALARS = {0: "<u1", 1: "<i1", 2: "<u2", 3: "<i2", 4: "<u4", 5: "<i4", 6: "<f4", 7: "<u1", 10: "<u8", 11: "<i8",
            12: "<f8"}
_STRING, _ARRAY = 8, 9


def read_gguf_metadata(path: Path) -> dict[str, Any]:
    """The key-value metadata of a GGUF file (versions 2 and 3), read directly: the format is a header and a
    list of typed values. (The `gguf` package's reader builds a numpy view per string, ~30 s for Llama-3's
    400,000 vocabulary strings; this reads them in about a second.) Tensor data is never read."""
    import numpy as np

    data = memoryview(path.read_bytes())
    if bytes(data[:4]) != b"GGUF":
        raise ValueError("no GGUF magic number")
    version = int.from_bytes(data[4:8], "little")
    if version not in (2, 3):
        raise ValueError(f"GGUF version {version} (2 and 3 are read)")
    n_kv = int.from_bytes(data[16:24], "little")
    pos = 24

    def u64() -> int:
        nonlocal pos
        pos += 8
        return int.from_bytes(data[pos - 8:pos], "little")

    def u32() -> int:
        nonlocal pos
        pos += 4
        return int.from_bytes(data[pos - 4:pos], "little")

    def string() -> str:
        nonlocal pos
        n = u64()
        pos += n
        return bytes(data[pos - n:pos]).decode("utf-8", errors="surrogateescape")

    def value(kind: int) -> Any:
        nonlocal pos
        if kind == _STRING:
            return string()
        if kind == _ARRAY:
            inner, count = u32(), u64()
            if inner == _STRING:
                return [string() for _ in range(count)]
            if inner == _ARRAY:
                return [value(_ARRAY) for _ in range(count)]
            dtype = np.dtype(_SCALARS[inner])
            out = np.frombuffer(data, dtype=dtype, count=count, offset=pos)
            pos += count * dtype.itemsize
            return out.astype(bool).tolist() if inner == 7 else out.tolist()
        dtype = np.dtype(_SCALARS[kind])
        pos += dtype.itemsize
        got = np.frombuffer(data, dtype=dtype, count=1, offset=pos - dtype.itemsize)[0].item()
        return bool(got) if kind == 7 else got

    meta = {}
    for _ in range(n_kv):
        key = string()
        meta[key] = value(u32())
    return meta


def read_gguf_vocab(path: str | Path) -> GgufVocab:
    """The tokenizer fields of a GGUF file; a file that is not GGUF, or has no vocabulary, is a UserError."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path}: no such GGUF file; give a .gguf vocabulary or model file")
    try:
        meta = read_gguf_metadata(path)
    except (ValueError, KeyError, IndexError, OverflowError) as e:
        raise UserError(f"{path}: not a readable GGUF file ({e or type(e).__name__}); give a .gguf vocabulary or "
                        "model file") from None
    tokens = meta.get("tokenizer.ggml.tokens")
    if not tokens:
        raise UserError(f"{path}: the GGUF file has no tokenizer vocabulary (tokenizer.ggml.tokens)")
    model = meta.get("tokenizer.ggml.model", "")
    arch = meta.get("general.architecture", "")
    family = meta.get("tokenizer.ggml.pre") or ("gpt-neox" if arch == "gptneox" else "default" if model == "llama"
                                                 else "gpt-2")
    scores = meta.get("tokenizer.ggml.scores")
    return GgufVocab(path=path, model=model, family=family, tokens=list(tokens),
                     token_types=[int(t) for t in meta.get("tokenizer.ggml.token_type", [NORMAL] * len(tokens))],
                     scores=[float(x) for x in scores] if scores is not None else None,
                     merges=meta.get("tokenizer.ggml.merges"),
                     bos_id=meta.get("tokenizer.ggml.bos_token_id"), eos_id=meta.get("tokenizer.ggml.eos_token_id"),
                     unk_id=meta.get("tokenizer.ggml.unknown_token_id"),
                     # llama.cpp's default where the file does not say: BOS for SentencePiece and Llama-3
                     add_bos=bool(meta.get("tokenizer.ggml.add_bos_token", model == "llama" or family == "llama-bpe")))


def tokenizer_from_gguf(path: str | Path):
    """The family's `tokenizers.Tokenizer` built from a GGUF vocabulary (see the module docstring)."""
    vocab = read_gguf_vocab(path)
    if vocab.model == "llama" and vocab.family in SENTENCEPIECE_FAMILIES:
        tok = _sentencepiece(vocab)
    elif vocab.model == "gpt2" and vocab.family in BYTE_LEVEL_FAMILIES:
        tok = _byte_level(vocab)
    else:
        known = ", ".join(f"{m}/{f}" for m, fs in (("llama", SENTENCEPIECE_FAMILIES), ("gpt2", BYTE_LEVEL_FAMILIES))
                          for f in fs)
        raise UserError(f"{vocab.path}: tokenizer family {vocab.model}/{vocab.family} is not one lmaudit rebuilds "
                        f"(known: {known}); use the model's own tokenizer.json instead")
    _add_special(tok, vocab)
    return tok


def _sentencepiece(v: GgufVocab):
    from tokenizers import Tokenizer, decoders, models, normalizers

    if v.scores is None:
        raise UserError(f"{v.path}: a SentencePiece vocabulary without scores cannot be rebuilt")
    vocab = {t: i for i, t in enumerate(v.tokens)}
    normal = [ty == NORMAL for ty in v.token_types]
    merges = []  # every split of a normal piece into two normal pieces, ranked by the merged piece's score
    for piece, pid in vocab.items():
        if not normal[pid]:
            continue
        for i in range(1, len(piece)):
            a, b = piece[:i], piece[i:]
            ia, ib = vocab.get(a), vocab.get(b)
            if ia is not None and ib is not None and normal[ia] and normal[ib]:
                merges.append((-v.scores[pid], ia, ib, a, b))
    merges.sort()
    unk = v.tokens[v.unk_id] if v.unk_id is not None else None
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[(a, b) for *_, a, b in merges], byte_fallback=True,
                               fuse_unk=True, unk_token=unk))
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
                                     decoders.Strip(" ", 1, 0)])
    return tok


def _byte_level(v: GgufVocab):
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers

    if not v.merges:
        raise UserError(f"{v.path}: a byte-level BPE vocabulary without merges cannot be rebuilt")
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    split = {
        "gpt-2": byte_level,
        "gpt-neox": byte_level,
        "mpt": byte_level,
        "starcoder": pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True), byte_level]),
        "llama-bpe": pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(LLAMA3_SPLIT), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]),
        "falcon": pre_tokenizers.Sequence([
            pre_tokenizers.Punctuation(behavior="contiguous"), byte_level,
            pre_tokenizers.Digits(individual_digits=False),
            pre_tokenizers.Split(Regex("[0-9][0-9][0-9]"), behavior="isolated", invert=False)]),
    }[v.family]
    tok = Tokenizer(models.BPE(vocab={t: i for i, t in enumerate(v.tokens)},
                               merges=[tuple(m.split(" ", 1)) for m in v.merges],
                               ignore_merges=v.family == "llama-bpe"))
    tok.pre_tokenizer = split
    if v.family in ("gpt-neox", "mpt"):
        tok.normalizer = normalizers.NFC()
    tok.decoder = decoders.ByteLevel()
    return tok


def _add_special(tok, v: GgufVocab) -> None:
    """Control tokens are special; user-defined ones (GPT-NeoX's whitespace runs) match before the model."""
    from tokenizers import AddedToken

    user = [AddedToken(v.tokens[i], normalized=False, special=False)
            for i, t in enumerate(v.token_types) if t == USER_DEFINED]
    if user:
        tok.add_tokens(user)
    control = [AddedToken(v.tokens[i], special=True) for i, t in enumerate(v.token_types) if t == CONTROL]
    if control:
        tok.add_special_tokens(control)


def save_tokenizer_folder(gguf_path: str | Path, out_dir: str | Path) -> Path:
    """Write the family's tokenizer as a Hugging Face folder (tokenizer.json, tokenizer_config.json,
    special_tokens_map.json) that every lmaudit command and `AutoTokenizer.from_pretrained` load."""
    import shutil
    import tempfile

    from tokenizers import processors
    from transformers import PreTrainedTokenizerFast

    out = Path(out_dir)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UserError(f"{out} exists and is not an empty folder; give a new folder for the tokenizer")
    vocab = read_gguf_vocab(gguf_path)
    tok = tokenizer_from_gguf(gguf_path)

    def name(i: int | None) -> str | None:
        return vocab.tokens[i] if i is not None and 0 <= i < len(vocab.tokens) else None

    bos = name(vocab.bos_id)
    if vocab.add_bos and bos is not None:  # the family's own encode() starts with BOS (Llama-2, Llama-3)
        tok.post_processor = processors.TemplateProcessing(single=f"{bos} $A", pair=f"{bos} $A {bos} $B",
                                                           special_tokens=[(bos, vocab.bos_id)])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=bos, eos_token=name(vocab.eos_id),
                                   unk_token=name(vocab.unk_id), clean_up_tokenization_spaces=False)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:  # written beside the target and renamed into place: an interrupted run leaves no half folder
        fast.save_pretrained(str(tmp))
        meta = {"source": str(vocab.path), "model": vocab.model, "family": vocab.family, "add_bos": vocab.add_bos}
        (tmp / "lmaudit_gguf.json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        tmp.chmod(0o755)
        if out.exists():
            out.rmdir()  # empty (checked above)
        tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out
