"""Tokenizers for indexing: UTF-8 bytes, a local `tokenizers` file/folder, or a Hugging Face hub name.

Why: the index must hold exactly the token ids the audited model sees, so spans found in the index line up
with model generations. This module gives every tokenizer one small interface (`encode`, `encode_batch`,
`decode`, `vocab_size`, `dtype`) and picks the narrowest infini-gram token width. Token ids are written
little-endian; the all-ones value of the width (0xFF, 0xFFFF, 0xFFFFFFFF) is the document separator,
so no real token may use it. Special tokens (BOS/EOS) are never added while encoding: documents are
delimited by the separator instead.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from ingest.errors import UserError

Dtype = Literal["u8", "u16", "u32"]
TOKEN_WIDTH: dict[str, int] = {"u8": 1, "u16": 2, "u32": 4}
NUMPY_DTYPE: dict[str, type[np.unsignedinteger[Any]]] = {"u8": np.uint8, "u16": np.uint16, "u32": np.uint32}


def separator_id(dtype: str) -> int:
    """The document-separator token id of a width: all bits set (255, 65535 or 4294967295)."""
    return (1 << (8 * TOKEN_WIDTH[dtype])) - 1


def dtype_for_vocab(vocab_size: int) -> Dtype:
    """Narrowest width whose separator id is above every real id (ids run 0 .. vocab_size-1)."""
    if vocab_size <= 0xFF:
        return "u8"
    if vocab_size <= 0xFFFF:
        return "u16"
    if vocab_size <= 0xFFFFFFFF:
        return "u32"
    raise UserError(f"vocabulary of {vocab_size} tokens is too large for infini-gram (max 4294967295)")


@dataclass
class Tokenizer:
    """Common interface. Subclasses implement `encode_batch` and `decode`."""

    name: str
    vocab_size: int
    dtype: Dtype
    kind: Literal["bytes", "file", "hub"]
    path: str | None = None
    sha256: str | None = None
    eos_token_id: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def separator_id(self) -> int:
        return separator_id(self.dtype)

    @property
    def token_width(self) -> int:
        return TOKEN_WIDTH[self.dtype]

    def encode(self, text: str) -> list[int]:
        return self.encode_batch([text])[0].tolist()

    def encode_batch(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Token ids of each text as numpy arrays of `self.dtype`."""
        raise NotImplementedError

    def decode(self, ids: Sequence[int]) -> str:
        raise NotImplementedError

    def describe(self) -> dict[str, Any]:
        """What the index manifest records about the tokenizer."""
        return {
            "name": self.name,
            "kind": self.kind,
            "path": self.path,
            "sha256": self.sha256,
            "vocab_size": self.vocab_size,
            "eos_token_id": self.eos_token_id,
            **self.extra,
        }


class BytesTokenizer(Tokenizer):
    """UTF-8 bytes as tokens (u8). 0xFF never occurs in UTF-8, so it is free for the separator."""

    def __init__(self) -> None:
        super().__init__(name="bytes", vocab_size=256, dtype="u8", kind="bytes")

    def encode_batch(self, texts: Sequence[str]) -> list[np.ndarray]:
        return [np.frombuffer(t.encode("utf-8"), dtype=np.uint8) for t in texts]

    def decode(self, ids: Sequence[int]) -> str:
        return bytes(int(i) for i in ids).decode("utf-8", errors="replace")


class HFTokenizer(Tokenizer):
    """A `tokenizers.Tokenizer` (from tokenizer.json, or the fast backend of a transformers tokenizer)."""

    def __init__(self, backend: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._backend = backend
        self._np = NUMPY_DTYPE[self.dtype]
        # encode_batch_fast skips offset tracking (about 1.5x faster); older tokenizers lack it.
        self._encode = getattr(backend, "encode_batch_fast", backend.encode_batch)

    def encode_batch(self, texts: Sequence[str]) -> list[np.ndarray]:
        encs = self._encode(list(texts), add_special_tokens=False)
        return [np.asarray(e.ids, dtype=self._np) for e in encs]

    def decode(self, ids: Sequence[int]) -> str:
        return self._backend.decode([int(i) for i in ids], skip_special_tokens=False)


def _sha256_file(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _eos_from_backend(backend: Any, folder: Path | None) -> int | None:
    """EOS id from tokenizer_config.json (folder) or a conventional special token name."""
    if folder is not None and (folder / "tokenizer_config.json").is_file():
        try:
            cfg = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
            eos = cfg.get("eos_token")
            if isinstance(eos, dict):
                eos = eos.get("content")
            if isinstance(eos, str) and backend.token_to_id(eos) is not None:
                return int(backend.token_to_id(eos))
        except (OSError, ValueError):
            pass
    for name in ("<|endoftext|>", "</s>", "<eos>", "<|end_of_text|>", "[SEP]"):
        tid = backend.token_to_id(name)
        if tid is not None:
            return int(tid)
    return None


def _from_backend(backend: Any, *, name: str, kind: Literal["file", "hub"], path: str | None, sha256: str | None,
                  folder: Path | None, eos: int | None = None) -> HFTokenizer:
    vocab_size = int(backend.get_vocab_size(with_added_tokens=True))
    vocab = backend.get_vocab(with_added_tokens=True)
    if vocab:
        vocab_size = max(vocab_size, max(vocab.values()) + 1)  # ids are not always dense
    dtype = dtype_for_vocab(vocab_size)
    if dtype == "u8":
        dtype = "u16"  # a tiny trained vocabulary still gets u16: u8 is reserved for raw bytes
    if eos is None:
        eos = _eos_from_backend(backend, folder)
    return HFTokenizer(backend, name=name, vocab_size=vocab_size, dtype=dtype, kind=kind, path=path,
                       sha256=sha256, eos_token_id=eos)


def load_tokenizer(spec: str | os.PathLike[str] | Tokenizer) -> Tokenizer:
    """Load `bytes`, a tokenizer.json file, a folder holding one, or a hub name (offline, from the cache).

    Raises `UserError` when the tokenizer cannot be found or loaded without network access.
    """
    if isinstance(spec, Tokenizer):
        return spec
    text = os.fspath(spec)
    if text == "bytes":
        return BytesTokenizer()
    path = Path(text).expanduser()
    if path.exists():
        return _load_local(path)
    if text.endswith(".json") or text.startswith((".", "/", "~")):
        raise UserError(f"tokenizer file {text} does not exist: check the path, or pass 'bytes' or a hub name")
    return _load_hub(text)


def _load_local(path: Path) -> Tokenizer:
    from tokenizers import Tokenizer as RawTokenizer

    file = path / "tokenizer.json" if path.is_dir() else path
    if file.is_file():
        try:
            backend = RawTokenizer.from_file(str(file))
        except Exception as e:  # tokenizers raises a bare Exception on a malformed file
            raise UserError(f"cannot load tokenizer {file}: {str(e).splitlines()[0]}") from None
        return _from_backend(backend, name=str(path), kind="file", path=str(file.resolve()),
                             sha256=_sha256_file(file), folder=file.parent)
    # A folder without tokenizer.json (e.g. vocab.json + merges.txt): let transformers convert it.
    return _load_transformers(str(path), kind="file", folder=path)


def _load_hub(name: str) -> Tokenizer:
    return _load_transformers(name, kind="hub", folder=None)


def _load_transformers(name: str, *, kind: Literal["file", "hub"], folder: Path | None) -> Tokenizer:
    try:
        import transformers
        from transformers import AutoTokenizer

        transformers.utils.logging.set_verbosity_error()
        tok = AutoTokenizer.from_pretrained(name, local_files_only=True)
    except Exception as e:
        first = (str(e).splitlines() or [type(e).__name__])[0]
        raise UserError(
            f"cannot load tokenizer '{name}' offline ({first}); download it first or pass a local tokenizer.json folder"
        ) from None
    backend = getattr(tok, "backend_tokenizer", None)
    if backend is None:
        raise UserError(f"tokenizer '{name}' has no fast (Rust) version; convert it to tokenizer.json first")
    serialized = backend.to_str()
    return _from_backend(backend, name=name, kind=kind, path=str(folder.resolve()) if folder else None,
                         sha256=hashlib.sha256(serialized.encode("utf-8")).hexdigest(), folder=folder,
                         eos=tok.eos_token_id)
