"""Read a BPE tokenizer's merge list and the way it cuts text into the units its trainer counted.

A BPE trainer counts adjacent symbol pairs *inside pre-tokenized words* (after normalisation) and merges the
most frequent pair, in order. To replay that on other text we need exactly three things from the tokenizer:
the ordered merges, the word splitter (its own normalizer + pre-tokenizer, via the `tokenizers` library so
every regex and option matches), and the initial symbols of a word:

* byte-level BPE (GPT-2, Llama 3, the sandbox): the ByteLevel pre-tokenizer already maps every byte to one
  visible character, so a word's characters are its initial symbols;
* character BPE with byte fallback (Llama 2, Mistral; SentencePiece converted): characters are the symbols,
  a character missing from the vocabulary becomes its UTF-8 bytes ``<0xXX>`` (which are never merged). With
  no pre-tokenizer (the normalizer writes "\u2581" for spaces) words are cut before each "\u2581", as
  SentencePiece's trainer does (it never merges across a word boundary).

Anything else (Unigram, WordPiece, WordLevel, a BPE without merges) has no merge list to read, and is
refused with a one-line `UserError`.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ingest.errors import UserError

METASPACE = "\u2581"
# SentencePiece words (no pre-tokenizer): a word starts at a "▁" that begins a run of them, and at the last "▁"
# of a run before a non-space: "▁▁▁▁return" is "▁▁▁" + "▁return", as Llama-2's tokenizer writes it (ids 1678,
# 736; SentencePiece's allow_whitespace_only_pieces). Splitting before every "▁" broke indentation runs apart.
_BEFORE_METASPACE = re.compile(f"(?<=[^{METASPACE}])(?={METASPACE})|(?={METASPACE}[^{METASPACE}])")


@dataclass(frozen=True)
class BpeTokenizer:
    """What the replay needs from a BPE tokenizer (see the module docstring)."""

    path: Path  # the tokenizer.json
    sha256: str  # of tokenizer.json: which merge list an estimate came from
    merges: tuple[tuple[str, str], ...]
    byte_level: bool
    vocab: frozenset[str]
    byte_fallback: bool = False
    unk_token: str | None = None
    continuing_subword_prefix: str = ""
    end_of_word_suffix: str = ""
    _split: Callable[[str], list[str]] = field(repr=False, compare=False, default=lambda s: [s])

    def words(self, text: str) -> list[str]:
        """The pre-tokenized words of `text`, as the trainer saw them (normalised, pre-tokenized)."""
        return [w for w in self._split(text) if w]

    def symbols(self, word: str) -> tuple[str, ...]:
        """The initial symbols of a word (before any merge)."""
        if self.byte_level:
            syms = list(word)
        else:
            syms = []
            for ch in word:
                if ch in self.vocab:
                    syms.append(ch)
                elif self.byte_fallback:
                    syms += [f"<0x{b:02X}>" for b in ch.encode("utf-8")]
                else:
                    syms.append(self.unk_token or "<unk>")
        if self.continuing_subword_prefix:
            syms = syms[:1] + [self.continuing_subword_prefix + s for s in syms[1:]]
        if self.end_of_word_suffix and syms:
            syms[-1] = syms[-1] + self.end_of_word_suffix
        return tuple(syms)

    def merged(self, a: str, b: str) -> str:
        """The symbol that merging (a, b) makes."""
        p = self.continuing_subword_prefix
        if p and b.startswith(p):
            b = b[len(p):]
        if self.end_of_word_suffix and a.endswith(self.end_of_word_suffix):  # pragma: no cover - malformed
            a = a[: -len(self.end_of_word_suffix)]
        return a + b

    def word_bytes(self, word: str) -> int:
        """UTF-8 bytes of the text a word stands for (the unit the estimated shares are in)."""
        return len(word) if self.byte_level else len(word.replace(METASPACE, " ").encode("utf-8"))


def _tokenizer_json(path: Path) -> Path:
    p = Path(path)
    if p.is_dir():
        p = p / "tokenizer.json"
    if not p.is_file():
        raise UserError(f"no tokenizer.json at {path}: pass a tokenizer.json file or a folder that holds one")
    return p


def _parse_merges(raw: list[Any], where: Path) -> tuple[tuple[str, str], ...]:
    out = []
    for i, m in enumerate(raw):
        if isinstance(m, str):
            parts = m.split(" ")
        elif isinstance(m, (list, tuple)):
            parts = list(m)
        else:
            parts = []
        if len(parts) != 2 or not all(isinstance(x, str) and x for x in parts):
            raise UserError(f"{where}: merge {i + 1} ({m!r}) is not a pair of tokens")
        out.append((parts[0], parts[1]))
    return tuple(out)


def _has_type(node: Any, name: str) -> bool:
    if isinstance(node, dict):
        return node.get("type") == name or any(_has_type(v, name) for v in node.values())
    if isinstance(node, list):
        return any(_has_type(v, name) for v in node)
    return False


def load_bpe(path: "str | Path") -> BpeTokenizer:
    """Load a local tokenizer.json (or a folder holding one) as a `BpeTokenizer`; `UserError` otherwise."""
    from tokenizers import Tokenizer

    tj = _tokenizer_json(Path(path))
    raw_bytes = tj.read_bytes()
    try:
        cfg = json.loads(raw_bytes)
    except ValueError as exc:
        raise UserError(f"{tj} is not valid JSON ({exc})") from None
    model = cfg.get("model") if isinstance(cfg, dict) else None
    if not isinstance(model, dict):
        raise UserError(f"{tj} has no model section: is it a `tokenizers` tokenizer.json?")
    kind = model.get("type") or ("BPE" if "merges" in model else None)
    if kind != "BPE":
        raise UserError(f"{tj} is a {kind or 'unknown'} tokenizer: only BPE tokenizers have a merge list "
                        "to infer a training mixture from")
    merges = _parse_merges(model.get("merges") or [], tj)
    if not merges:
        raise UserError(f"{tj} is a BPE tokenizer without merges: there is nothing to infer a mixture from")
    try:
        tok = Tokenizer.from_str(raw_bytes.decode("utf-8"))
    except Exception as exc:  # the library's own parse error (a tokenizer this version cannot read)
        raise UserError(f"the tokenizers library cannot load {tj}: {exc}") from None
    byte_level = _has_type(cfg.get("pre_tokenizer"), "ByteLevel")
    normalizer, pre = tok.normalizer, tok.pre_tokenizer

    def split(text: str) -> list[str]:
        if normalizer is not None:
            text = normalizer.normalize_str(text)
        if pre is not None:
            return [w for w, _ in pre.pre_tokenize_str(text)]
        return _BEFORE_METASPACE.split(text)

    vocab = model.get("vocab") or {}
    return BpeTokenizer(
        path=tj, sha256=hashlib.sha256(raw_bytes).hexdigest(), merges=merges, byte_level=byte_level,
        vocab=frozenset(vocab), byte_fallback=bool(model.get("byte_fallback")), unk_token=model.get("unk_token"),
        continuing_subword_prefix=model.get("continuing_subword_prefix") or "",
        end_of_word_suffix=model.get("end_of_word_suffix") or "", _split=split,
    )
