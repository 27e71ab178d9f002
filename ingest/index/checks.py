"""Cheap checks that an index folder holds the files its manifest describes, run at every open and at attach.

Why: the C++ engine trusts its files (its asserts are compiled out). A damaged file makes it read out of
bounds (SIGBUS, no message) or answer silently wrong: an all-zero suffix array matches nothing, random
offsets give documents without their metadata. These checks read a few hundred kilobytes whatever the index
size, so opening or attaching a big index stays fast: file sizes against the manifest and the pointer width,
a sample of document offsets (the first is 0, they increase, each lands on a document separator), a sample
of metadata lines (each a JSON object starting right after a newline) and adjacent suffix-array entries at
evenly spaced ranks (in range, on a token boundary, distinct, in order). Damage between the sampled places
can pass; `IndexEngine` then checks what it reads while tracing and raises `IndexDamaged` (one line naming
the file) rather than return wrong documents.
"""

from __future__ import annotations

import json
import mmap
import os
from pathlib import Path

import numpy as np

from ingest.errors import UserError
from ingest.index.manifest import (
    FORBIDDEN_PATH_WORDS,
    MANIFEST_NAME,
    IndexManifest,
    ShardInfo,
    ptr_size,
)
from ingest.index.tokenizer import TOKEN_WIDTH

SA_PROBES = 256  # adjacent rank pairs checked in each suffix array
OFFSET_SAMPLES = 1024  # document offsets checked per shard
METADATA_SAMPLES = 64  # metadata lines parsed per shard
_FIX = "rebuild the index or re-attach it (`lmaudit index build` / `lmaudit index attach`)"


class IndexDamaged(UserError):
    """An index file holds impossible values: the index must be rebuilt or re-attached (exit 2)."""


def index_damaged(path: str | os.PathLike[str], what: str) -> IndexDamaged:
    """The one-line error for a damaged index file: which file, what is wrong, and the fix."""
    return IndexDamaged(f"{path} is damaged ({what}); {_FIX}")


def spot_check_suffix_array(folder: Path, s: int, ds: int, ptr: int, w: int, probes: int = SA_PROBES) -> None:
    """table.s is a suffix array of tokenized.s, judged at `probes` evenly spaced adjacent rank pairs: both
    pointers inside the token file, on a token boundary, different (an all-zero table has every pointer 0),
    and their suffixes in order. A random table, or another index's of the same size, fails at once."""
    n = ds // w
    if n < 2:
        return
    path = folder / f"table.{s}"
    with open(path, "rb") as ft, open(folder / f"tokenized.{s}", "rb") as fd:
        table = mmap.mmap(ft.fileno(), 0, access=mmap.ACCESS_READ)
        data = mmap.mmap(fd.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            for k in range(probes):
                r = (n - 2) * k // max(1, probes - 1)
                a = int.from_bytes(table[r * ptr:(r + 1) * ptr], "little")
                b = int.from_bytes(table[(r + 1) * ptr:(r + 2) * ptr], "little")
                if a >= ds or b >= ds or a % w or b % w:
                    raise UserError(f"{path} points outside tokenized.{s} (rank {r}); the suffix array is damaged or "
                                    f"belongs to another index: {_FIX}")
                if a == b:
                    raise UserError(f"{path} holds the same position at ranks {r} and {r + 1}; the suffix array is "
                                    f"damaged (zeroed?): {_FIX}")
                if data[a:a + 64] > data[b:b + 64]:  # windows differ, or b's is a proper prefix: out of order
                    raise UserError(f"{path} is not sorted (ranks {r} and {r + 1}); the suffix array is damaged or "
                                    f"belongs to another index: {_FIX}")
        finally:
            table.close()
            data.close()


def _picks(n: int, k: int) -> np.ndarray:
    """Up to k indices in [0, n), evenly spaced, first and last included."""
    return np.unique(np.linspace(0, n - 1, num=min(n, k)).astype(np.int64))


def spot_check_offsets(folder: Path, info: ShardInfo, w: int, sep: int, samples: int = OFFSET_SAMPLES) -> None:
    """offset.s at evenly spaced documents: the first is 0, they increase, they lie inside tokenized.s on a
    token boundary and each points at a document separator."""
    path = folder / f"offset.{info.shard}"
    od = np.memmap(path, dtype="<u8", mode="r")
    data = np.memmap(folder / f"tokenized.{info.shard}", dtype=f"<u{w}", mode="r")
    try:
        vals = np.asarray(od[_picks(len(od), samples)]).astype(np.uint64)
        if int(vals[0]) != 0 or np.any(vals[1:] <= vals[:-1]) or int(vals[-1]) >= info.ds_bytes \
                or np.any(vals % w):
            raise UserError(f"{path} is not an increasing list of document starts inside tokenized.{info.shard} "
                            f"(checked at {len(vals)} documents); the file is damaged: {_FIX}")
        if np.any(np.asarray(data[(vals // w).astype(np.int64)]) != sep):
            raise UserError(f"{path} points at tokens that are not document separators; the offsets are damaged "
                            f"or belong to another index: {_FIX}")
    finally:
        del od, data


def spot_check_metadata(folder: Path, info: ShardInfo, samples: int = METADATA_SAMPLES) -> None:
    """metaoff.s / metadata.s at evenly spaced documents: offsets start at 0, increase, stay inside
    metadata.s and start a line; each sampled line is a JSON object."""
    s = info.shard
    path, mpath = folder / f"metaoff.{s}", folder / f"metadata.{s}"
    size = mpath.stat().st_size
    if info.n_docs == 0:
        return
    om = np.memmap(path, dtype="<u8", mode="r")
    try:
        picks = _picks(len(om), samples)
        vals = np.asarray(om[picks]).astype(np.uint64)
        if int(vals[0]) != 0 or np.any(vals[1:] <= vals[:-1]) or int(vals[-1]) >= size:
            raise UserError(f"{path} is not an increasing list of line starts inside metadata.{s}; the file is "
                            f"damaged: {_FIX}")
        ends = [int(om[i + 1]) if i + 1 < len(om) else size for i in picks.tolist()]
    finally:
        del om
    with open(mpath, "rb") as f:
        for i, a, b in zip(picks.tolist(), vals.tolist(), ends):
            if b <= a or b > size:
                raise UserError(f"{path}: document {i}'s metadata line ends outside metadata.{s}; {_FIX}")
            f.seek(max(0, a - 1))
            raw = f.read(b - a + (a > 0))
            if a > 0 and raw[:1] != b"\n":
                raise UserError(f"{path}: document {i}'s metadata does not start a line of metadata.{s}; the "
                                f"offsets are damaged: {_FIX}")
            line = raw[1:] if a > 0 else raw
            try:
                ok = isinstance(json.loads(line.decode("utf-8")), dict)
            except (ValueError, RecursionError):
                ok = False
            if not ok:
                raise UserError(f"{mpath}: document {i}'s metadata line is not a JSON object; the file is damaged: "
                                f"{_FIX}")


def validate_index_files(index_dir: str | os.PathLike[str], manifest: IndexManifest) -> None:
    """The folder holds exactly the shard files the manifest describes, with consistent sizes and contents
    that pass the spot checks above (raises `UserError`, one line)."""
    from ingest.index.tokenizer import separator_id

    folder = Path(index_dir)
    w = TOKEN_WIDTH.get(manifest.dtype)
    if w is None:
        raise UserError(f"{folder / MANIFEST_NAME}: unknown dtype {manifest.dtype!r}; rebuild or re-attach the index")
    n = len(manifest.shards)
    if n == 0:
        raise UserError(f"{folder / MANIFEST_NAME} lists no shards; rebuild or re-attach the index")
    if [i.shard for i in manifest.shards] != list(range(n)):
        raise UserError(f"{folder / MANIFEST_NAME}: shards are not numbered 0..{n - 1}; rebuild or re-attach the index")
    if manifest.n_docs != sum(i.n_docs for i in manifest.shards):
        raise UserError(f"{folder / MANIFEST_NAME}: n_docs differs from the sum over shards; the manifest was edited "
                        "or damaged: rebuild or re-attach the index")
    if manifest.n_tokens != sum(i.n_tokens for i in manifest.shards):
        raise UserError(f"{folder / MANIFEST_NAME}: n_tokens differs from the sum over shards; the manifest was "
                        "edited or damaged: rebuild or re-attach the index")
    has_meta = manifest.shards[0].has_metadata
    has_unigram = (folder / "unigram.0").exists()
    expected = {f"{r}.{s}" for s in range(n) for r in ("tokenized", "table", "offset")}
    if has_meta:
        expected |= {f"{r}.{s}" for s in range(n) for r in ("metadata", "metaoff")}
    if has_unigram:
        expected |= {f"unigram.{s}" for s in range(n)}
    if not folder.is_dir():  # an attached index whose data folder (manifest.data_dir) was moved or unmounted
        raise UserError(f"{folder}: the index's data folder is gone or not a folder; mount or move it back, or "
                        "re-attach the index where its files are now (`lmaudit index attach`)")
    for entry in sorted(os.listdir(folder)):
        if entry not in expected and any(word in entry for word in FORBIDDEN_PATH_WORDS):
            raise UserError(
                f"{folder / entry} is not a file of this index but its name contains an infini-gram role word, "
                "which makes the engine misread the folder (crash); move it out of the index folder"
            )
    for name in sorted(expected):
        if not (folder / name).is_file():
            raise UserError(f"{folder}: missing {name}; the index is incomplete, rebuild it")
    sep = separator_id(manifest.dtype)
    for info in manifest.shards:
        s = info.shard
        ds = (folder / f"tokenized.{s}").stat().st_size
        sa = (folder / f"table.{s}").stat().st_size
        od = (folder / f"offset.{s}").stat().st_size
        tok_cnt = ds // w
        if ds == 0 or ds % w:
            raise UserError(f"{folder}/tokenized.{s} has {ds} bytes, not a positive multiple of {w}; rebuild the index")
        if ds != info.ds_bytes or od != 8 * info.n_docs or info.n_docs < 1:
            raise UserError(
                f"{folder}: shard {s} files differ from the manifest (tokenized {ds} vs {info.ds_bytes} bytes, "
                f"offset {od} vs {8 * info.n_docs}); the index changed or is truncated: rebuild or re-attach it"
            )
        if info.n_tokens != tok_cnt - info.n_docs:
            raise UserError(f"{folder}: shard {s} holds {tok_cnt - info.n_docs} tokens but the manifest says "
                            f"{info.n_tokens}; the index changed: rebuild or re-attach it")
        if info.ptr_size != ptr_size(ds) or sa != tok_cnt * ptr_size(ds):
            raise UserError(
                f"{folder}/table.{s} has {sa} bytes but {tok_cnt} tokens need {tok_cnt * ptr_size(ds)}; "
                "the suffix array is truncated or stale: rebuild the index"
            )
        if has_meta and (folder / f"metaoff.{s}").stat().st_size != od:
            raise UserError(f"{folder}/metaoff.{s} does not match offset.{s} in size; rebuild the index")
        if has_meta:
            with open(folder / f"metaoff.{s}", "rb") as f:
                f.seek(8 * (info.n_docs - 1))
                last = int.from_bytes(f.read(8), "little")
            if last >= (folder / f"metadata.{s}").stat().st_size:
                raise UserError(f"{folder}/metadata.{s} is shorter than metaoff.{s} says (truncated?); rebuild the "
                                "index or restore the file")
        with open(folder / f"tokenized.{s}", "rb") as f:
            if f.read(w) != b"\xff" * w:
                raise UserError(f"{folder}/tokenized.{s} does not start with a document separator; not a v4 index")
        spot_check_offsets(folder, info, w, sep)
        if has_meta:
            spot_check_metadata(folder, info)
        spot_check_suffix_array(folder, s, ds, ptr_size(ds), w)
