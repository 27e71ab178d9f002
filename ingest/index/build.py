"""Build an infini-gram (v4) index from JSONL/Parquet documents, or attach a manifest to a prebuilt one.

Why this is our own code rather than `python -m infini_gram.indexing`: that script only knows three
hard-coded tokenizers, reads whole files into memory, cannot report which line is broken, and leaves a
half-written index behind on failure. Here the shard files are written exactly as infini-gram's
`indexing.py` writes them for version 4, then the `rust_indexing` binary shipped in the wheel builds the
suffix arrays. Everything goes into a temporary folder next to `out`, which is renamed into place only
when all shards are complete, so a bad input never leaves a partial index.

Layout of shard `s` (token width w = 1, 2 or 4 bytes, little-endian):
- `tokenized.s`: for each document, the separator (w bytes of 0xFF) followed by its token ids;
- `offset.s`:    u64 byte offset in `tokenized.s` of each document's separator;
- `metadata.s`:  one JSON line per document: {"path", "linenum" (0-based line), "metadata" (other fields)};
- `metaoff.s`:   u64 byte offset of each metadata line;
- `unigram.s`:   "token_id count" per line, separator included (the engine checks the total against the
                 token count); for u8 one count per line instead, see `_write_unigram`;
- `table.s`:     the suffix array: one pointer of ceil(log2(bytes)/8) bytes per token.
Plus `lmaudit-index.json` (the manifest) and `lmaudit-logprob.npy` (unigram log-probabilities). These two
names must never contain "tokenized", "table", "offset", "metadata", "metaoff" or "unigram": the engine
claims every file whose path contains one of those words.
"""

from __future__ import annotations

import hashlib
from array import array
import importlib.resources
import json
import math
import os
import shutil
import subprocess
import time
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from ingest.errors import UserError
from ingest.index.manifest import (  # noqa: F401  (also re-exported: callers that imported them from here)
    FORBIDDEN_PATH_WORDS,
    FORMAT_VERSION,
    INDEX_VERSION,
    LOGPROB_NAME,
    MANIFEST_NAME,
    IndexManifest,
    ShardInfo,
    SourceFile,
    check_index_path,
    ptr_size,
)
from ingest.index.readers import Document, iter_file, list_input_files
from ingest.index.tokenizer import NUMPY_DTYPE, TOKEN_WIDTH, Tokenizer, load_tokenizer, separator_id

HACK = 100_000  # bytes of overlap between suffix-array parts, as in infini_gram/indexing.py
_MIN_PART_BYTES = 4 * HACK  # parts smaller than this break rust_indexing: tiny shards use one CPU
_BATCH_CHARS = 1 << 20
_BATCH_DOCS = 2048
_ENCODE_AHEAD = 2  # batches encoding in background threads while one is written (`_encoded`)
_UNIGRAM_FLOOR_MASS = 0.5  # unseen token: log(0.5 / n_tokens), i.e. half an occurrence
# rust_indexing sizes its induced-sorting buckets by the whole alphabet: for u32 tokens that is 2^32 u64
# counters (32 GiB) per make-part process, whatever the corpus size.
U32_MIN_MEMORY = 36 << 30


class IndexBuildError(RuntimeError):
    """The `rust_indexing` binary failed (disk full, out of memory, killed): not an input problem."""


# ----------------------------------------------------------------------------------------------------
# Step 1: tokenize into shard files


class _ShardWriter:
    """Appends documents to the four per-shard files of infini-gram v4 and counts unigrams."""

    def __init__(self, folder: Path, s: int, tok: Tokenizer, vocab_len: int) -> None:
        self.s = s
        self.np_dtype = NUMPY_DTYPE[tok.dtype]
        self.sep = np.array([tok.separator_id], dtype=self.np_dtype)
        self.width = tok.token_width
        self.ds = open(folder / f"tokenized.{s}", "wb", buffering=1 << 22)
        self.mt = open(folder / f"metadata.{s}", "wb", buffering=1 << 20)
        self.offsets = array("Q")  # compact: one u64 per document, as in offset.s / metaoff.s
        self.meta_offsets = array("Q")
        self.ds_pos = 0
        self.mt_pos = 0
        self.n_docs = 0
        self.n_tokens = 0
        self.counts = np.zeros(vocab_len, dtype=np.int64)

    def write(self, docs: list[tuple[np.ndarray, bytes]]) -> None:
        if not docs:
            return
        pieces: list[np.ndarray] = []
        for ids, meta_line in docs:
            self.offsets.append(self.ds_pos)
            self.meta_offsets.append(self.mt_pos)
            pieces.append(self.sep)
            pieces.append(ids)
            self.ds_pos += (len(ids) + 1) * self.width
            self.mt_pos += len(meta_line)
            self.n_tokens += len(ids)
        self.n_docs += len(docs)
        self.ds.write(np.concatenate(pieces).tobytes())
        self.mt.write(b"".join(m for _, m in docs))
        body = np.concatenate(pieces[1::2]) if len(pieces) > 2 else pieces[1]
        if len(body):
            self.counts += np.bincount(body, minlength=len(self.counts))[: len(self.counts)]

    def close(self, folder: Path, tok: Tokenizer) -> ShardInfo:
        self.ds.close()
        self.mt.close()
        np.asarray(self.offsets, dtype=np.uint64).tofile(folder / f"offset.{self.s}")
        np.asarray(self.meta_offsets, dtype=np.uint64).tofile(folder / f"metaoff.{self.s}")
        _write_unigram(folder / f"unigram.{self.s}", self.counts, self.n_docs, tok)
        return ShardInfo(self.s, self.n_docs, self.n_tokens, self.ds_pos, ptr_size(self.ds_pos))


def _write_unigram(path: Path, counts: np.ndarray, n_separators: int, tok: Tokenizer) -> None:
    """`unigram.s` as the engine reads it when asked to precompute unigram log-probabilities.

    The engine adds up these counts and asserts the sum equals the shard's token count *including*
    separators, so the separator id gets the document count. For u16/u32 lines are "id count" (nonzero
    ids only, as infini-gram writes them). For u8 the engine parses the id into an 8-bit char type and
    reads only its first digit, so there we write the other accepted form: one count per line, the line
    number being the id (all 256 ids).
    """
    sep = tok.separator_id
    if tok.dtype == "u8":
        dense = np.zeros(256, dtype=np.int64)
        dense[: min(len(counts), 256)] = counts[:256]
        dense[sep] += n_separators
        path.write_text("".join(f"{int(c)}\n" for c in dense), encoding="ascii")
        return
    nonzero = np.flatnonzero(counts)
    lines = [f"{int(i)} {int(counts[i])}\n" for i in nonzero]
    lines.append(f"{sep} {n_separators}\n")
    path.write_text("".join(lines), encoding="ascii")


def _sha256(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _source_root(files: Sequence[Path]) -> Path:
    parents = [str(f.parent) for f in files]
    return Path(os.path.commonpath(parents))


def _batched(docs: Iterable[Document]) -> Iterable[list[Document]]:
    batch: list[Document] = []
    chars = 0
    for d in docs:
        batch.append(d)
        chars += len(d.text)
        if chars >= _BATCH_CHARS or len(batch) >= _BATCH_DOCS:
            yield batch
            batch, chars = [], 0
    if batch:
        yield batch


def _encoded(docs: Iterable[Document], tok: Tokenizer) -> Iterator[tuple[list[Document], list[np.ndarray]]]:
    """(batch, its token ids) in input order, with up to `ahead` batches encoding in background threads.

    Why: `encode_batch` spreads one batch over the cores (Rust threads, GIL released) but a batch ends
    with its longest documents running alone, and reading JSON and writing shard files run on one core
    in between. Encoding the next batches while this thread reads and writes keeps every core busy (on 2
    cores ~2x the tokens/s of one batch at a time); the output is the same, batch order being kept."""
    ahead = _ENCODE_AHEAD
    pending: deque[tuple[list[Document], Future]] = deque()
    # ahead = 0: each batch encoded, then written (one worker, awaited at once)
    with ThreadPoolExecutor(max_workers=max(1, ahead), thread_name_prefix="lmaudit-encode") as pool:
        try:
            for batch in _batched(docs):
                pending.append((batch, pool.submit(tok.encode_batch, [d.text for d in batch])))
                if len(pending) > ahead:
                    done, fut = pending.popleft()
                    yield done, fut.result()
            while pending:
                done, fut = pending.popleft()
                yield done, fut.result()
        finally:
            for _, fut in pending:  # an error (or a closed generator): drop the queued work
                fut.cancel()


def _progress(enabled: bool):  # -> rich.progress.Progress
    from rich.progress import BarColumn, DownloadColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    from ingest.progress import progress_bar

    return progress_bar(
        TextColumn("[bold]tokenizing[/]"), BarColumn(), DownloadColumn(), TextColumn("{task.fields[docs]:,} docs"),
        TextColumn("{task.fields[tokens]:,} tokens"), TimeElapsedColumn(), TimeRemainingColumn(),
        enabled=enabled, transient=False,
    )


def _tokenize(files: list[Path], tok: Tokenizer, folder: Path, shards: int, text_field: str,
              root: Path, progress: bool) -> tuple[list[ShardInfo], list[SourceFile], np.ndarray]:
    vocab_len = tok.vocab_size
    writers = [_ShardWriter(folder, s, tok, vocab_len) for s in range(shards)]
    sizes = [f.stat().st_size for f in files]
    sources: list[SourceFile] = []
    k = 0  # global document counter: document k goes to shard k % shards
    try:
        with _progress(progress) as bar:
            task = bar.add_task("tokenize", total=sum(sizes), docs=0, tokens=0)
            done_bytes = 0
            for path, size in zip(files, sizes):
                rel = path.relative_to(root).as_posix()
                n_file = 0
                file_chars = 0
                for batch, encoded in _encoded(iter_file(path, text_field), tok):
                    per_shard: list[list[tuple[np.ndarray, bytes]]] = [[] for _ in range(shards)]
                    for d, ids in zip(batch, encoded):
                        if len(ids) and int(ids.max()) >= tok.separator_id:
                            raise UserError(
                                f"{path}:{d.line_no}: tokenizer produced id {int(ids.max())}, which collides with "
                                f"the {tok.dtype} document separator; use a tokenizer with fewer tokens"
                            )
                        meta = {"path": rel, "linenum": d.line_no - 1, "metadata": d.metadata}
                        line = (json.dumps(meta, default=str) + "\n").encode("utf-8")
                        per_shard[k % shards].append((ids, line))
                        k += 1
                    for w, docs in zip(writers, per_shard):
                        w.write(docs)
                    n_file += len(batch)
                    file_chars += sum(len(d.text) for d in batch)
                    bar.update(task, completed=done_bytes + min(file_chars, size), docs=k,
                               tokens=sum(w.n_tokens for w in writers))
                done_bytes += size
                bar.update(task, completed=done_bytes)
                sources.append(SourceFile(str(path), rel, _sha256(path), size, n_file))
    finally:
        for w in writers:
            if not w.ds.closed:
                w.ds.close()
                w.mt.close()
    if k < shards:
        raise UserError(f"only {k} documents for {shards} shards: every shard needs one; use --shards {max(1, k)}")
    infos = [w.close(folder, tok) for w in writers]
    counts = sum((w.counts for w in writers), start=np.zeros(vocab_len, dtype=np.int64))
    return infos, sources, counts


# ----------------------------------------------------------------------------------------------------
# Step 2: suffix arrays with rust_indexing


def rust_indexing_path() -> Path:
    """The `rust_indexing` executable shipped inside the infini-gram wheel."""
    path = Path(str(importlib.resources.files("infini_gram") / "rust_indexing"))
    if not path.is_file():
        raise IndexBuildError(f"rust_indexing not found at {path}; reinstall infini-gram==2.6.0")
    if not os.access(path, os.X_OK):
        raise IndexBuildError(f"{path} is not executable; run chmod +x on it or reinstall infini-gram")
    return path


def _run(cmd: list[str], step: str, shard: int) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace", check=False)
    if proc.returncode != 0:
        tail = " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-5:])
        raise IndexBuildError(f"rust_indexing {step} failed on shard {shard} (exit {proc.returncode}): {tail}")


def _physical_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return 8 << 30


def build_suffix_array(ds_path: Path, sa_path: Path, work: Path, token_width: int, cpus: int,
                       mem_bytes: int | None = None, shard: int = 0) -> int:
    """Build `sa_path` for `ds_path` (make-part, merge, concat as infini_gram/indexing.py); returns CPUs used."""
    exe = str(rust_indexing_path())
    ds_size = ds_path.stat().st_size
    ratio = ptr_size(ds_size)
    mem = mem_bytes or _physical_memory() // 2
    batches = 1
    while batches * (mem // (12 if token_width == 1 else 8)) < ds_size:
        batches *= 2
    # A part smaller than the overlap makes rust_indexing emit duplicate suffixes: tiny shards get one CPU.
    jobs = max(1, min(cpus, ds_size // (_MIN_PART_BYTES * batches)))
    if token_width == 4:
        jobs = 1  # each u32 make-part allocates 32 GiB of buckets: never run two at once
    total = batches * jobs
    step = ds_size // total
    if step % token_width:
        step += token_width - step % token_width
    parts = work / f"parts-{shard}"
    merged = work / f"merged-{shard}"
    for d in (parts, merged):
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True)
    common = ["--ratio", str(ratio), "--token-width", str(token_width)]
    for first in range(0, total, jobs):
        procs = []
        for i in range(first, min(first + jobs, total)):
            s, e = i * step, min((i + 1) * step + HACK, ds_size)
            procs.append(subprocess.Popen(
                [exe, "make-part", "--data-file", str(ds_path), "--parts-dir", str(parts),
                 "--start-byte", str(s), "--end-byte", str(e), *common],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, errors="replace"))
        failures = []
        for p in procs:
            _, err = p.communicate()
            if p.returncode != 0:
                failures.append(f"exit {p.returncode}: {' | '.join(err.strip().splitlines()[-3:])}")
        if failures:
            raise IndexBuildError(f"rust_indexing make-part failed on shard {shard}: {failures[0]}")
    _run([exe, "merge", "--data-file", str(ds_path), "--parts-dir", str(parts), "--merged-dir", str(merged),
          "--num-threads", str(jobs), "--hacksize", str(HACK), *common], "merge", shard)
    shutil.rmtree(parts)
    _run([exe, "concat", "--data-file", str(ds_path), "--merged-dir", str(merged), "--merged-file", str(sa_path),
          "--num-threads", str(jobs), *common], "concat", shard)
    shutil.rmtree(merged)
    expected = (ds_size // token_width) * ratio
    if sa_path.stat().st_size != expected:
        raise IndexBuildError(
            f"rust_indexing wrote {sa_path.stat().st_size} bytes for shard {shard}, expected {expected}"
        )
    return jobs


# ----------------------------------------------------------------------------------------------------
# Step 3: unigram log-probabilities and manifest


def unigram_logprobs(counts: np.ndarray, vocab_size: int) -> tuple[np.ndarray, float]:
    """float64 log P(token) over non-separator tokens; unseen ids get log(0.5 / total)."""
    counts = np.asarray(counts, dtype=np.float64)[:vocab_size]
    total = float(counts.sum())
    floor = math.log(_UNIGRAM_FLOOR_MASS / total) if total > 0 else 0.0
    out = np.full(vocab_size, floor, dtype=np.float64)
    seen = counts > 0
    out[seen] = np.log(counts[seen]) - math.log(total)
    return out, floor


def _software() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for pkg in ("infini-gram", "tokenizers", "lmaudit"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            pass
    return out


def _temp_dir_for(out: Path) -> Path:
    tmp = out.parent / f".{out.name}.building-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    return tmp


def _publish(tmp: Path, out: Path, overwrite: bool) -> None:
    if out.exists():
        if not overwrite:
            raise UserError(f"{out} already exists; remove it or pass an --out that does not exist")
        trash = out.parent / f".{out.name}.old-{os.getpid()}"
        os.replace(out, trash)
        os.replace(tmp, out)
        shutil.rmtree(trash, ignore_errors=True)
    else:
        os.replace(tmp, out)


def build_index(inputs: Sequence[str | os.PathLike[str]] | str | os.PathLike[str],
                tokenizer: Tokenizer | str, out: str | os.PathLike[str], shards: int = 1,
                text_field: str = "text", cpus: int | None = None, *, overwrite: bool = False,
                progress: bool = True, mem_bytes: int | None = None) -> IndexManifest:
    """Tokenize `inputs`, write `shards` infini-gram v4 shards and their suffix arrays into `out`.

    Documents go round-robin over shards in input order. `cpus` bounds rust_indexing's parallelism
    (default: all cores; shards under a few hundred KB always use one). Raises `UserError` for bad input,
    an existing `out` (unless `overwrite`) or a forbidden path; `IndexBuildError` if rust_indexing fails.
    """
    t0 = time.perf_counter()
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    if shards < 1:
        raise UserError(f"--shards must be at least 1, got {shards}")
    out_path = Path(check_index_path(out, "--out"))
    if out_path.exists() and not overwrite:
        raise UserError(f"{out_path} already exists; remove it or pass an --out that does not exist")
    blocking = next((p for p in out_path.parents if p.exists() and not p.is_dir()), None)
    if blocking is not None:
        raise UserError(f"--out {out_path} is under {blocking}, which is a file; choose a folder path")
    tok = load_tokenizer(tokenizer)
    if tok.dtype == "u32" and (mem_bytes or _physical_memory()) < U32_MIN_MEMORY:
        raise UserError(
            f"tokenizer {tok.name} has {tok.vocab_size} tokens, so the index needs u32 ids, and rust_indexing "
            f"then allocates 32 GiB per suffix-array job; this machine has {_physical_memory() >> 30} GiB. "
            "Build on a machine with >= 36 GiB of memory, or use a tokenizer with <= 65535 tokens"
        )
    files = list_input_files(inputs if isinstance(inputs, (list, tuple)) else [inputs])  # type: ignore[list-item]
    root = _source_root(files)
    cpus = max(1, cpus or os.cpu_count() or 1)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _temp_dir_for(out_path)
    try:
        infos, sources, counts = _tokenize(files, tok, tmp, shards, text_field, root, progress)
        if sum(i.n_tokens for i in infos) == 0:
            raise UserError(f"every document in {', '.join(map(str, files[:3]))}{' ...' if len(files) > 3 else ''} "
                            f"has an empty {text_field!r}; check --text-field or the input files")
        t1 = time.perf_counter()
        work = tmp / "work"
        used = []
        for info in infos:
            used.append(build_suffix_array(tmp / f"tokenized.{info.shard}", tmp / f"table.{info.shard}", work,
                                           tok.token_width, cpus, mem_bytes, info.shard))
        shutil.rmtree(work, ignore_errors=True)
        t2 = time.perf_counter()
        logp, floor = unigram_logprobs(counts, tok.vocab_size)
        np.save(tmp / LOGPROB_NAME, logp)
        n_tokens = sum(i.n_tokens for i in infos)
        manifest = IndexManifest(
            dtype=tok.dtype, vocab_size=tok.vocab_size, separator_id=tok.separator_id,
            eos_token_id=tok.eos_token_id, tokenizer=tok.describe(), n_docs=sum(i.n_docs for i in infos),
            n_tokens=n_tokens, shards=infos, sources=sources, source_root=str(root), text_field=text_field,
            unigram_floor=floor, token_width=tok.token_width, built_at=started,
            timings={"tokenize_s": round(t1 - t0, 3), "suffix_array_s": round(t2 - t1, 3),
                     "total_s": round(time.perf_counter() - t0, 3),
                     "tokens_per_s": round(n_tokens / max(t1 - t0, 1e-9)), "sa_cpus": max(used)},
            software=_software(),
        )
        manifest.save(tmp)
        _publish(tmp, out_path, overwrite)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return manifest


# ----------------------------------------------------------------------------------------------------
# Attach: describe an index built elsewhere (e.g. with infini_gram.indexing)


def _shard_numbers(folder: Path) -> list[int]:
    nums = []
    for p in folder.glob("tokenized.*"):
        suffix = p.name.split(".", 1)[1]
        if not suffix.isdigit():
            raise UserError(f"unexpected file {p}; infini-gram shards are named tokenized.0, tokenized.1, ...")
        nums.append(int(suffix))
    nums.sort()
    if not nums:
        raise UserError(f"{folder} holds no tokenized.* files; is it an infini-gram index folder?")
    if nums != list(range(len(nums))):
        raise UserError(f"{folder}: shard numbers {nums} are not 0..{len(nums) - 1}; a shard is missing")
    return nums


def _infer_width(ds_bytes: int, sa_bytes: int) -> list[int]:
    return [w for w in (1, 2, 4)
            if ds_bytes % w == 0 and ds_bytes and sa_bytes == (ds_bytes // w) * ptr_size(ds_bytes)]


def _count_tokens(path: Path, dtype: str, vocab_len: int, n_docs: int | None = None) -> np.ndarray:
    """Unigram counts of one `tokenized.s` (separators excluded). With `n_docs`, the file must hold exactly
    that many separators (one per entry of `offset.s`): another index's offsets, or a file cut or joined,
    fail here instead of returning documents that straddle two others."""
    mm = np.memmap(path, dtype=NUMPY_DTYPE[dtype], mode="r")
    counts = np.zeros(vocab_len, dtype=np.int64)
    sep = separator_id(dtype)
    step = 1 << 24
    n_sep = 0
    for i in range(0, len(mm), step):
        chunk = np.asarray(mm[i:i + step])
        is_sep = chunk == sep
        n_sep += int(is_sep.sum())
        chunk = chunk[~is_sep]
        if len(chunk):
            if int(chunk.max()) >= vocab_len:
                raise UserError(f"{path} holds token id {int(chunk.max())} >= vocabulary size {vocab_len}; "
                                "wrong tokenizer for this index")
            counts += np.bincount(chunk, minlength=vocab_len)
    del mm
    if n_docs is not None and n_sep != n_docs:
        raise UserError(f"{path} holds {n_sep} document separators but {path.with_name('offset' + path.suffix).name} "
                        f"lists {n_docs} documents; the files belong to different indexes or are damaged")
    return counts


def _check_offsets(folder: Path, info: ShardInfo, dtype: str) -> None:
    """`offset.s` must start at 0, increase, and point at separators (a sample of them: the separator count
    is checked in full by `_count_tokens`)."""
    width = TOKEN_WIDTH[dtype]
    od = np.memmap(folder / f"offset.{info.shard}", dtype="<u8", mode="r")
    step = 1 << 22
    prev = -1
    for i in range(0, len(od), step):
        chunk = np.asarray(od[i:i + step]).astype(np.int64)
        if (i == 0 and chunk[0] != 0) or int(chunk[0]) <= prev or (len(chunk) > 1 and np.any(np.diff(chunk) <= 0)) \
                or int(chunk[-1]) >= info.ds_bytes or np.any(chunk % width):
            raise UserError(f"{folder}/offset.{info.shard} is not an increasing list of document starts inside "
                            f"tokenized.{info.shard}; the index is damaged or its files are mixed up")
        prev = int(chunk[-1])
    data = np.memmap(folder / f"tokenized.{info.shard}", dtype=NUMPY_DTYPE[dtype], mode="r")
    picks = np.unique(np.linspace(0, len(od) - 1, num=min(len(od), 1024)).astype(np.int64))
    if np.any(np.asarray(data[np.asarray(od[picks]).astype(np.int64) // width]) != separator_id(dtype)):
        raise UserError(f"{folder}/offset.{info.shard} points at tokens that are not document separators; the "
                        "index is damaged or its files are mixed up")
    del od, data


def attach_index(index_dir: str | os.PathLike[str], tokenizer: Tokenizer | str, dtype: str | None = None,
                 eos_token_id: int | None = None, sidecar: str | os.PathLike[str] | None = None) -> IndexManifest:
    """Describe a prebuilt infini-gram v4 index folder: its manifest and unigram table.

    The token width is read from the file sizes (`table.s` = tokens x pointer size) and must agree with
    `dtype` and with the tokenizer. Documents are counted from `offset.s`; unigram counts are computed
    from `tokenized.s`; a sample of documents must round-trip through the tokenizer. With `sidecar`, the
    manifest and the table are written there (in the warehouse) and nothing is written into `index_dir`,
    which may be read-only and shared; without it they go into `index_dir` (the old layout).
    """
    folder = Path(check_index_path(index_dir))
    if not folder.is_dir():
        raise UserError(f"index folder {folder} does not exist")
    tok = load_tokenizer(tokenizer)
    nums = _shard_numbers(folder)
    widths: set[int] = set()
    infos: list[ShardInfo] = []
    has_meta = []
    for s in nums:
        ds, sa, od = (folder / f"{n}.{s}" for n in ("tokenized", "table", "offset"))
        for p in (sa, od):
            if not p.is_file():
                raise UserError(f"{folder}: shard {s} has no {p.name}; the index is incomplete")
        cands = _infer_width(ds.stat().st_size, sa.stat().st_size)
        if not cands:
            raise UserError(f"{sa} has {sa.stat().st_size} bytes, which fits no token width for {ds.name} "
                            f"({ds.stat().st_size} bytes); the suffix array is truncated: rebuild it")
        widths.update(cands if len(cands) == 1 else [])
        od_bytes = od.stat().st_size
        if od_bytes % 8 or od_bytes == 0:
            raise UserError(f"{od} has {od_bytes} bytes, not a positive multiple of 8; the index is damaged")
        meta = (folder / f"metadata.{s}").is_file() and (folder / f"metaoff.{s}").is_file()
        has_meta.append(meta)
        infos.append(ShardInfo(s, od_bytes // 8, 0, ds.stat().st_size, ptr_size(ds.stat().st_size), meta))
    if dtype is None:
        if len(widths) > 1:
            raise UserError(f"{folder}: shards disagree on token width {sorted(widths)}; the index is damaged")
        dtype = {1: "u8", 2: "u16", 4: "u32"}[widths.pop()] if widths else tok.dtype
    if dtype not in TOKEN_WIDTH:
        raise UserError(f"unknown token dtype {dtype}; use u8, u16 or u32")
    if widths and TOKEN_WIDTH[dtype] not in widths:
        raise UserError(f"{folder}: files say {sorted(widths)}-byte tokens but dtype {dtype} was given")
    if dtype != tok.dtype:
        raise UserError(f"index uses {dtype} tokens but tokenizer {tok.name} needs {tok.dtype}; wrong tokenizer?")
    if len(set(has_meta)) > 1:
        raise UserError(f"{folder}: some shards have metadata files and others not; the index is incomplete")
    width = TOKEN_WIDTH[dtype]
    counts = np.zeros(tok.vocab_size, dtype=np.int64)
    for info in infos:
        tok_cnt = info.ds_bytes // width
        info.n_tokens = tok_cnt - info.n_docs
        info.has_metadata = has_meta[0]
        _check_offsets(folder, info, dtype)
        counts += _count_tokens(folder / f"tokenized.{info.shard}", dtype, tok.vocab_size, info.n_docs)
    if int(counts.sum()) == 0:
        raise UserError(f"{folder} holds no tokens; is it an infini-gram index folder?")
    _check_tokenizer_round_trip(folder, infos, dtype, tok)
    logp, floor = unigram_logprobs(counts, tok.vocab_size)
    manifest = IndexManifest(
        dtype=dtype, vocab_size=tok.vocab_size, separator_id=separator_id(dtype),
        eos_token_id=eos_token_id if eos_token_id is not None else tok.eos_token_id, tokenizer=tok.describe(),
        n_docs=sum(i.n_docs for i in infos), n_tokens=int(counts.sum()), shards=infos, text_field=None,
        unigram_floor=floor, token_width=width, attached=True,
        built_at=datetime.now(timezone.utc).isoformat(timespec="seconds"), software=_software(),
        data_dir=str(folder.resolve()) if sidecar is not None else None,
    )
    # the checks the engine makes on every open (file set, sizes against the manifest, spot checks of
    # offsets, metadata and the suffix array), now, so a bad folder is refused before anything is registered
    from ingest.index.checks import validate_index_files

    validate_index_files(str(folder), manifest)
    out = Path(sidecar) if sidecar is not None else folder
    out.mkdir(parents=True, exist_ok=True)
    np.save(out / LOGPROB_NAME, logp)
    manifest.save(out)
    return manifest


def check_index_folder(index_dir: str | os.PathLike[str], tokenizer: Tokenizer | str) -> IndexManifest:
    """Check a folder that has its own manifest (built by `lmaudit index build`, or attached before) as
    `attach_index` checks a prebuilt one, but with spot checks only (the manifest already holds the counts, so
    nothing is scanned in full and a big index attaches in well under a second): the file set, sizes and
    pointer width against the manifest, sampled offsets, metadata lines and suffix-array ranks
    (`ingest.index.checks`), the tokenizer on sampled documents, and the unigram table."""
    from ingest.index.checks import validate_index_files

    manifest = IndexManifest.load(index_dir)
    folder = Path(check_index_path(manifest.shard_dir(index_dir)))
    if not folder.is_dir():
        raise UserError(f"{index_dir}: its shard folder {folder} does not exist; rebuild or re-attach the index")
    tok = load_tokenizer(tokenizer)
    validate_index_files(folder, manifest)
    if manifest.dtype != tok.dtype:
        raise UserError(f"{index_dir} holds {manifest.dtype} tokens but tokenizer {tok.name} needs {tok.dtype}; pass "
                        "the index's own tokenizer")
    _check_tokenizer_round_trip(folder, manifest.shards, manifest.dtype, tok)
    manifest.load_logprobs(index_dir)
    return manifest


def _check_tokenizer_round_trip(folder: Path, infos: list[ShardInfo], dtype: str, tok: Tokenizer,
                                n_docs: int = 8, n_tokens: int = 200) -> None:
    """The tokenizer must be the index's: a few documents' first tokens, decoded and encoded again, give
    the same ids (a BPE re-encoding can differ at the cut, so only the first 3/4 are compared). With a wrong
    tokenizer of the same width most documents come back as other ids."""
    width = TOKEN_WIDTH[dtype]
    sep = separator_id(dtype)
    tried = agreed = 0
    for info in infos:
        data = np.memmap(folder / f"tokenized.{info.shard}", dtype=NUMPY_DTYPE[dtype], mode="r")
        offsets = np.memmap(folder / f"offset.{info.shard}", dtype=np.uint64, mode="r")
        for k in range(0, len(offsets), max(1, len(offsets) // n_docs)):
            start = int(offsets[k]) // width + 1  # after the document separator
            ids = [int(t) for t in data[start:start + n_tokens]]
            if sep in ids:
                ids = ids[:ids.index(sep)]
            if len(ids) < 8:
                continue
            keep = max(4, 3 * len(ids) // 4)
            tried += 1
            agreed += list(tok.encode(tok.decode(ids)))[:keep] == ids[:keep]
            if tried >= n_docs:
                break
        if tried >= n_docs:
            break
    if tried and agreed < (tried + 1) // 2:
        raise UserError(f"{folder}: only {agreed} of {tried} sampled documents decode and re-encode to the same "
                        f"ids with tokenizer {tok.name}; it is not the tokenizer this index was built with")
