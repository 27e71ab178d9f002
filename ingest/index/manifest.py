"""An index's manifest (`lmaudit-index.json`: what every index folder holds and how to open it) and the rules for
its paths and pointer widths, shared by the code that builds or attaches indexes (build.py), checks them
(checks.py) and opens them (engine.py), so that none of those imports another for these definitions.

A manifest records absolute paths (the tokenizer file, the data folder of an attached index) and is never
rewritten after a build, yet the index may since have moved with its warehouse (`mv`, `cp -r`). So a
recorded path is looked for first where it would be now, had it moved together with the index folder
(`moved_with`), and is used there only if its content is the recorded one (the tokenizer's sha256, the
shard files' sizes); else where it was recorded. A warehouse moved or copied thus reads its own tokenizer
and never the original's, while an index that moved alone still finds a tokenizer that stayed put.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ingest.errors import UserError

MANIFEST_NAME = "lmaudit-index.json"
LOGPROB_NAME = "lmaudit-logprob.npy"
FORMAT_VERSION = 1
INDEX_VERSION = 4
FORBIDDEN_PATH_WORDS = ("tokenized", "table", "offset", "metadata", "metaoff", "unigram")


def check_index_path(path: str | os.PathLike[str], what: str = "index folder") -> str:
    """Absolute form of `path`; `UserError` if it contains a word the infini-gram engine would misread.

    The engine sorts files into roles by searching the *whole path string* for "tokenized", "table", ...,
    so a folder called e.g. `tables/` or `offsets/` makes it mix up files and crash (C++ assert).
    """
    absolute = os.path.abspath(path)
    for word in FORBIDDEN_PATH_WORDS:
        if word in absolute:
            raise UserError(
                f"{what} path {absolute} contains '{word}', which crashes the infini-gram engine "
                f"(it matches file roles by substring); rename the folder so its path avoids "
                f"{', '.join(FORBIDDEN_PATH_WORDS)}"
            )
    return absolute


@dataclass
class ShardInfo:
    shard: int
    n_docs: int
    n_tokens: int  # excluding separators
    ds_bytes: int  # size of tokenized.s
    ptr_size: int  # bytes per suffix-array entry
    has_metadata: bool = True


@dataclass
class SourceFile:
    path: str  # absolute path at build time
    rel_path: str  # as stored in the metadata lines ("path")
    sha256: str
    bytes: int
    n_docs: int


@dataclass
class IndexManifest:
    """Everything needed to open and interpret an index; saved as `lmaudit-index.json` in its folder."""

    dtype: str
    vocab_size: int
    separator_id: int
    eos_token_id: int | None
    tokenizer: dict[str, Any]
    n_docs: int
    n_tokens: int  # excluding separators
    shards: list[ShardInfo]
    sources: list[SourceFile] = field(default_factory=list)
    source_root: str | None = None
    text_field: str | None = "text"
    unigram_logprob_file: str | None = LOGPROB_NAME
    unigram_floor: float | None = None
    unigram_floor_rule: str = "unseen token: log(0.5 / n_tokens); separators excluded from counts and total"
    token_width: int = 2
    index_version: int = INDEX_VERSION
    format_version: int = FORMAT_VERSION
    attached: bool = False
    built_at: str = ""
    timings: dict[str, float] = field(default_factory=dict)
    software: dict[str, str] = field(default_factory=dict)
    # set for an attached prebuilt index: its shard files stay in this (possibly read-only, shared) folder,
    # while this manifest and the unigram table live in the warehouse
    data_dir: str | None = None

    def shard_dir(self, index_dir: str | os.PathLike[str]) -> str:
        """Where the shard files (tokenized.s, table.s, ...) of the index described in `index_dir` are: an
        attached index's data folder, where it lies now if it moved with the index (same shard file sizes)."""
        if not self.data_dir:
            return str(index_dir)

        def same_files(folder: Path) -> bool:
            return all(_size(folder / f"tokenized.{s.shard}") == s.ds_bytes for s in self.shards)

        return moved_with(self.data_dir, index_dir, same_files)

    def tokenizer_spec(self, index_dir: str | os.PathLike[str]) -> str:
        """What `load_tokenizer` needs to load this index's tokenizer: its file (where it lies now if it moved
        with the index, and only if its sha256 is the recorded one), else its hub name or `bytes`."""
        tok = self.tokenizer
        path = tok.get("path")
        if not path:
            return str(tok.get("name"))
        digest = tok.get("sha256")

        def same_tokenizer(candidate: Path) -> bool:
            if candidate.is_file() and digest:
                return _sha256(candidate) == digest
            if candidate.is_dir() and digest:  # a folder transformers converts: its digest is of the converted form
                return _converted_sha256(candidate) == digest
            return False

        return moved_with(path, index_dir, same_tokenizer)

    @staticmethod
    def path_in(index_dir: str | os.PathLike[str]) -> Path:
        return Path(index_dir) / MANIFEST_NAME

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> IndexManifest:
        data = dict(data)
        data["shards"] = [ShardInfo(**s) for s in data.get("shards", [])]
        data["sources"] = [SourceFile(**s) for s in data.get("sources", [])]
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    def save(self, index_dir: str | os.PathLike[str]) -> Path:
        path = self.path_in(index_dir)
        tmp = path.with_name(path.name + ".part")
        tmp.write_text(json.dumps(self.to_dict(), indent=2, sort_keys=False) + "\n", encoding="utf-8")
        os.replace(tmp, path)
        return path

    @classmethod
    def load(cls, index_dir: str | os.PathLike[str]) -> IndexManifest:
        path = cls.path_in(index_dir)
        if not Path(index_dir).is_dir():
            raise UserError(f"index folder {index_dir} does not exist; build it with `lmaudit index build`, or "
                            "register it where it is now with `lmaudit index attach`")
        if not path.is_file():
            raise UserError(
                f"{index_dir} has no {MANIFEST_NAME}; build the index with `lmaudit index build` "
                "or describe a prebuilt infini-gram index with `lmaudit index attach`"
            )
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            manifest = cls.from_dict(data)
        except (ValueError, TypeError) as e:
            raise UserError(f"{path} is not a valid lmaudit manifest ({e}); rebuild or re-attach the index") from None
        if manifest.format_version > FORMAT_VERSION:
            raise UserError(f"{path} has manifest format {manifest.format_version}; upgrade lmaudit to read it")
        return manifest

    def load_logprobs(self, index_dir: str | os.PathLike[str]) -> np.ndarray:
        """Unigram log-probabilities (float64, one per token id; unseen ids hold `unigram_floor`)."""
        if not self.unigram_logprob_file:
            raise UserError(f"index {index_dir} has no unigram table; re-attach it with `lmaudit index attach`")
        path = Path(index_dir) / self.unigram_logprob_file
        try:
            table = np.load(path)
        except (OSError, ValueError, EOFError) as e:
            raise UserError(f"{path} is unreadable ({str(e).splitlines()[0]}); rebuild the index or restore the "
                            "file") from None
        if table.ndim != 1 or len(table) < self.vocab_size:
            raise UserError(f"{path} holds {table.shape} values, not one per token id ({self.vocab_size}); rebuild "
                            "the index or restore the file")
        return table


def moved_with(recorded: str, index_dir: str | os.PathLike[str], accept: Callable[[Path], bool]) -> str:
    """`recorded` (an absolute path a manifest holds) where it lies now if it moved together with the index
    folder, else as recorded.

    The manifest does not know where it was written, so each folder above the index (nearest first) is tried
    with each tail of the recorded path (shortest first): after `mv /a/wh /b/wh`, the recorded
    `/a/wh/sandbox/model/tokenizer.json` is found as `/b/wh/sandbox/model/tokenizer.json` before the search
    ever reaches `/a`. A candidate counts only if `accept` finds the recorded content there; reaching the
    recorded path itself means it did not move."""
    if not os.path.isabs(recorded):
        return recorded
    here = Path(os.path.abspath(index_dir))
    parts = Path(recorded).parts[1:]
    for above in (here, *here.parents):
        for i in range(len(parts) - 1, -1, -1):
            candidate = above.joinpath(*parts[i:])
            if str(candidate) == recorded:
                return recorded
            if candidate.exists() and accept(candidate):
                return str(candidate)
    return recorded


def _converted_sha256(folder: Path) -> str | None:
    """The sha256 `load_tokenizer` records for a tokenizer folder (of its converted form), None if it loads none."""
    from ingest.index.tokenizer import load_tokenizer

    try:
        return load_tokenizer(folder).describe().get("sha256")
    except (UserError, OSError):
        return None


def _size(path: Path) -> int | None:
    try:
        return path.stat().st_size
    except OSError:
        return None


def _sha256(path: Path) -> str | None:
    h = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    except OSError:
        return None
    return h.hexdigest()


def ptr_size(ds_bytes: int) -> int:
    """Bytes per suffix-array pointer, as rust_indexing computes it (at least 1)."""
    return max(1, int(math.ceil(math.log2(ds_bytes) / 8))) if ds_bytes > 1 else 1
