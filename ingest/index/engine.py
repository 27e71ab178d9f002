"""`IndexEngine`: a checked, typed wrapper around infini-gram 2.6.0's C++ engine for v4 indexes.

Why not `infini_gram.engine.InfiniGramEngine`: its C++ asserts are compiled out, so a damaged or oddly
named index does not fail cleanly, it segfaults or silently returns wrong counts (a truncated `table.0`
opens fine and answers 0 for everything); its Python layer returns `{'error': ...}` dicts instead of
raising, and `get_docs_by_ranks` calls a C++ method that does not exist. This wrapper validates the
folder against its `lmaudit-index.json` manifest *before* the C++ engine maps any file, calls the C++
object directly, validates every argument (an out-of-range rank is a segfault, not an exception), turns
results into dataclasses, and reopens the engine every N queries because the page tables of its memory
maps only grow. Prefetching (madvise WILLNEED) is off by default: it helps single interactive queries on
cold disks but slows batch work.

Shard numbering: the engine sorts shard files by *string*, so with 11+ shards `tokenized.10` comes before
`tokenized.2`. `shard` in this module is always the engine's index; `shard_files(s)` maps it back.
"""

from __future__ import annotations

import bisect
import json
import mmap
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from ingest.errors import UserError
from ingest.index.build import FORBIDDEN_PATH_WORDS, MANIFEST_NAME, IndexManifest, _ptr_size, check_index_path
from ingest.index.tokenizer import TOKEN_WIDTH

_DOC_BATCH = 256  # the engine starts one thread per requested document: keep batches bounded


class EngineError(RuntimeError):
    """The engine answered `{'error': ...}` or returned something impossible."""


def check_response(resp: Any) -> Any:
    """Raise `EngineError` for an infini-gram `{'error': ...}` answer, else return it unchanged."""
    if isinstance(resp, dict) and "error" in resp:
        raise EngineError(str(resp["error"]))
    return resp


class FindResult(TypedDict):
    cnt: int
    segment_by_shard: list[tuple[int, int]]


@dataclass(frozen=True)
class DocRecord:
    """A document (or a window of it) returned by the engine.

    `tokens` is the window; `window_start` is its token offset inside the document. For rank lookups
    `match_pos` is the token offset of the suffix (match) inside the document and
    `needle_offset = match_pos - window_start` its offset inside `tokens`; both are None for `doc()`.
    `path`/`linenum` (0-based) locate the source line; `metadata` holds the input's other fields.
    """

    shard: int
    doc_ix: int
    doc_len: int
    tokens: list[int]
    window_start: int
    rank: int | None = None
    match_pos: int | None = None
    needle_offset: int | None = None
    path: str | None = None
    linenum: int | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def is_full(self) -> bool:
        return self.window_start == 0 and len(self.tokens) == self.doc_len


@dataclass
class _ShardMaps:
    """Our own read-only maps of one shard, for rank -> pointer and raw token reads."""

    table: mmap.mmap
    tokens: mmap.mmap
    offsets: mmap.mmap
    ptr_size: int
    tok_cnt: int
    n_docs: int

    def close(self) -> None:
        for m in (self.table, self.tokens, self.offsets):
            m.close()


def _map(path: Path) -> mmap.mmap:
    with open(path, "rb") as f:
        return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)


def _validate_dir(index_dir: str, manifest: IndexManifest) -> None:
    """Check the folder holds exactly the shard files the manifest describes, with consistent sizes."""
    folder = Path(index_dir)
    w = TOKEN_WIDTH.get(manifest.dtype)
    if w is None:
        raise UserError(f"{folder / MANIFEST_NAME}: unknown dtype {manifest.dtype!r}; rebuild or re-attach the index")
    n = len(manifest.shards)
    if n == 0:
        raise UserError(f"{folder / MANIFEST_NAME} lists no shards; rebuild or re-attach the index")
    has_meta = manifest.shards[0].has_metadata
    has_unigram = (folder / "unigram.0").exists()
    expected = {f"{r}.{s}" for s in range(n) for r in ("tokenized", "table", "offset")}
    if has_meta:
        expected |= {f"{r}.{s}" for s in range(n) for r in ("metadata", "metaoff")}
    if has_unigram:
        expected |= {f"unigram.{s}" for s in range(n)}
    for entry in sorted(os.listdir(folder)):
        if entry not in expected and any(word in entry for word in FORBIDDEN_PATH_WORDS):
            raise UserError(
                f"{folder / entry} is not a file of this index but its name contains an infini-gram role word, "
                "which makes the engine misread the folder (crash); move it out of the index folder"
            )
    for name in sorted(expected):
        if not (folder / name).is_file():
            raise UserError(f"{folder}: missing {name}; the index is incomplete, rebuild it")
    for info in manifest.shards:
        s = info.shard
        ds = (folder / f"tokenized.{s}").stat().st_size
        sa = (folder / f"table.{s}").stat().st_size
        od = (folder / f"offset.{s}").stat().st_size
        tok_cnt = ds // w
        if ds == 0 or ds % w:
            raise UserError(f"{folder}/tokenized.{s} has {ds} bytes, not a positive multiple of {w}; rebuild the index")
        if ds != info.ds_bytes or od != 8 * info.n_docs:
            raise UserError(
                f"{folder}: shard {s} files differ from the manifest (tokenized {ds} vs {info.ds_bytes} bytes, "
                f"offset {od} vs {8 * info.n_docs}); the index changed or is truncated: rebuild or re-attach it"
            )
        if sa != tok_cnt * _ptr_size(ds):
            raise UserError(
                f"{folder}/table.{s} has {sa} bytes but {tok_cnt} tokens need {tok_cnt * _ptr_size(ds)}; "
                "the suffix array is truncated or stale: rebuild the index"
            )
        if has_meta and (folder / f"metaoff.{s}").stat().st_size != od:
            raise UserError(f"{folder}/metaoff.{s} does not match offset.{s} in size; rebuild the index")
        with open(folder / f"tokenized.{s}", "rb") as f:
            if f.read(w) != b"\xff" * w:
                raise UserError(f"{folder}/tokenized.{s} does not start with a document separator; not a v4 index")


def engine_shard_order(n_shards: int) -> list[int]:
    """File shard numbers in the order the C++ engine loads them (sorted as strings)."""
    return sorted(range(n_shards), key=str)


class IndexEngine:
    """Count n-grams, find suffix-array ranges and fetch documents from one or more index folders."""

    def __init__(self, index_dirs: str | os.PathLike[str] | Sequence[str | os.PathLike[str]], *,
                 prefetch_depths: tuple[int, int, int] = (0, 0, 0), reopen_every: int | None = 100_000,
                 load_to_ram: bool = False) -> None:
        """`prefetch_depths` = (ds, sa, od) madvise depths: (0, 0, 0) for batch work, (1, 3, 3) is
        infini-gram's interactive default. `reopen_every` queries the engine is reopened (None: never)."""
        if isinstance(index_dirs, (str, os.PathLike)):
            index_dirs = [index_dirs]
        if not index_dirs:
            raise UserError("no index folder given")
        ds_d, sa_d, od_d = prefetch_depths
        if min(prefetch_depths) < 0 or sa_d < ds_d:
            raise ValueError("prefetch depths must be >= 0 with sa >= ds")
        self.index_dirs: list[str] = [check_index_path(d) for d in index_dirs]
        self.manifests: list[IndexManifest] = [IndexManifest.load(d) for d in self.index_dirs]
        for d, m in zip(self.index_dirs, self.manifests):
            _validate_dir(d, m)
        first = self.manifests[0]
        for d, m in zip(self.index_dirs[1:], self.manifests[1:]):
            if (m.dtype, m.vocab_size) != (first.dtype, first.vocab_size) or (
                    m.tokenizer.get("sha256") and first.tokenizer.get("sha256")
                    and m.tokenizer["sha256"] != first.tokenizer["sha256"]):
                raise UserError(f"index {d} uses a different tokenizer or dtype than {self.index_dirs[0]}; "
                                "open indexes built with the same tokenizer only")
        self.manifest = first
        self.dtype = first.dtype
        self.width = TOKEN_WIDTH[first.dtype]
        self.separator_id = first.separator_id
        self.vocab_size = first.vocab_size
        self.eos_token_id = first.eos_token_id
        self.prefetch_depths = (ds_d, sa_d, od_d)
        self.reopen_every = reopen_every
        self.load_to_ram = load_to_ram
        # (index_dir, file shard number, ShardInfo) in engine order
        self._shards = [(d, s, m.shards[s]) for d, m in zip(self.index_dirs, self.manifests)
                        for s in engine_shard_order(len(m.shards))]
        self._doc_base = []
        base = 0
        for _, _, info in self._shards:
            self._doc_base.append(base)
            base += info.n_docs
        self.n_docs = base
        self.n_tokens = sum(m.n_tokens for m in self.manifests)
        self._engine: Any = None
        self._maps: dict[int, _ShardMaps] = {}
        self._queries = 0
        self.reopen()

    # ------------------------------------------------------------------ lifecycle

    def _open_cpp(self) -> Any:
        from infini_gram import cpp_engine

        cls = {"u8": cpp_engine.Engine_U8, "u16": cpp_engine.Engine_U16, "u32": cpp_engine.Engine_U32}[self.dtype]
        # The engine types eos and vocab_size as the token type: for u8, 256 does not fit, and ids
        # 0..254 plus the separator is what compute_unigram_counts should scan anyway.
        vocab = min(self.vocab_size, self.separator_id)
        eos = self.eos_token_id if self.eos_token_id is not None and self.eos_token_id < self.separator_id \
            else self.separator_id
        ds_d, sa_d, od_d = self.prefetch_depths
        return cls(self.index_dirs, eos, vocab, 4, self.load_to_ram, ds_d, sa_d, od_d, set(), 512, False, {})

    def reopen(self) -> None:
        """Drop and recreate the C++ engine and our maps (returns their page tables to the OS)."""
        self.close()
        self._engine = self._open_cpp()
        self._queries = 0

    def close(self) -> None:
        self._engine = None  # the C++ destructor unmaps the files
        for m in self._maps.values():
            m.close()
        self._maps = {}

    def __enter__(self) -> IndexEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _cpp(self) -> Any:
        if self._engine is None:
            raise EngineError("engine is closed; call reopen()")
        self._queries += 1
        if self.reopen_every and self._queries > self.reopen_every:
            self.reopen()
            self._queries = 1
        return self._engine

    # ------------------------------------------------------------------ shards

    @property
    def num_shards(self) -> int:
        return len(self._shards)

    def shard_files(self, shard: int) -> tuple[str, int]:
        """(index folder, file shard number) of engine shard `shard`."""
        d, s, _ = self._shards[self._check_shard(shard)]
        return d, s

    def tok_cnt(self, shard: int) -> int:
        """Suffix-array size of a shard: tokens plus one separator per document."""
        info = self._shards[self._check_shard(shard)][2]
        return info.ds_bytes // self.width

    def _check_shard(self, shard: int) -> int:
        if not (isinstance(shard, int) and 0 <= shard < len(self._shards)):
            raise ValueError(f"shard must be in [0, {len(self._shards)}), got {shard!r}")
        return shard

    def _maps_for(self, shard: int) -> _ShardMaps:
        m = self._maps.get(shard)
        if m is None:
            d, s, info = self._shards[self._check_shard(shard)]
            folder = Path(d)
            m = _ShardMaps(_map(folder / f"table.{s}"), _map(folder / f"tokenized.{s}"),
                           _map(folder / f"offset.{s}"), _ptr_size(info.ds_bytes),
                           info.ds_bytes // self.width, info.n_docs)
            self._maps[shard] = m
        return m

    # ------------------------------------------------------------------ queries

    def _ids(self, ids: Sequence[int]) -> list[int]:
        out = [int(i) for i in ids]
        if out and (min(out) < 0 or max(out) >= self.separator_id):
            raise ValueError(f"token ids must be in [0, {self.separator_id}) (the separator is excluded), got "
                             f"{min(out)}..{max(out)}")
        return out

    def find(self, ids: Sequence[int]) -> FindResult:
        """Occurrence count and, per shard, the suffix-array rank range [lo, hi) of `ids`.

        On a miss each range is empty, lo == hi being the insertion rank. The empty query matches every
        position, separators included."""
        r = self._cpp().find(input_ids=self._ids(ids))
        return {"cnt": int(r.cnt), "segment_by_shard": [(int(a), int(b)) for a, b in r.segment_by_shard]}

    def count(self, ids: Sequence[int]) -> int:
        """Occurrences of `ids` in the corpus (never across documents)."""
        return int(self._cpp().count(input_ids=self._ids(ids)).count)

    def rank_to_ptr(self, shard: int, rank: int) -> int:
        """Byte offset in `tokenized` of the suffix at `rank`."""
        m = self._maps_for(shard)
        if not (0 <= rank < m.tok_cnt):
            raise ValueError(f"rank must be in [0, {m.tok_cnt}) for shard {shard}, got {rank}")
        a = rank * m.ptr_size
        return int.from_bytes(m.table[a:a + m.ptr_size], "little")

    def tokens_at(self, shard: int, ptr: int, max_len: int) -> list[int]:
        """Up to `max_len` tokens starting at byte offset `ptr`, stopping before the next separator."""
        m = self._maps_for(shard)
        raw = m.tokens[ptr:ptr + max(0, max_len) * self.width]
        toks = [int.from_bytes(raw[i:i + self.width], "little") for i in range(0, len(raw), self.width)] \
            if self.width > 1 else list(raw)
        try:
            return toks[:toks.index(self.separator_id)]
        except ValueError:
            return toks

    def token_at(self, shard: int, ptr: int) -> int:
        """The token at byte offset `ptr` (the separator id at a document start)."""
        m = self._maps_for(shard)
        return int.from_bytes(m.tokens[ptr:ptr + self.width], "little")

    def suffix_tokens(self, shard: int, rank: int, max_len: int) -> list[int]:
        """First tokens (at most `max_len`, within one document) of the suffix at `rank`; [] at a separator."""
        return self.tokens_at(shard, self.rank_to_ptr(shard, rank), max_len)

    def lcp_at_rank(self, shard: int, rank: int, ids: Sequence[int]) -> int:
        """Length of the common prefix of `ids` and the suffix at `rank` (tokens, within one document)."""
        suffix = self.suffix_tokens(shard, rank, len(ids))
        n = 0
        for a, b in zip(ids, suffix):
            if a != b:
                break
            n += 1
        return n

    def longest_prefix_len(self, ids: Sequence[int]) -> int:
        """Largest n such that ids[:n] occurs: one find, then the two neighbours of the insertion rank in
        every shard (the suffix array's neighbours share the longest prefix with any absent query)."""
        q = self._ids(ids)
        if not q:
            return 0
        res = self.find(q)
        if res["cnt"] > 0:
            return len(q)
        best = 0
        for s, (lo, _) in enumerate(res["segment_by_shard"]):
            for rank in (lo - 1, lo):
                if 0 <= rank < self.tok_cnt(s):
                    best = max(best, self.lcp_at_rank(s, rank, q))
        return best

    # ------------------------------------------------------------------ documents

    def _record(self, shard: int, raw: Any, rank: int | None, ptr: int | None) -> DocRecord:
        meta_raw = raw.metadata
        path = linenum = None
        metadata: dict[str, Any] = {}
        if meta_raw:
            try:
                parsed = json.loads(meta_raw)
            except ValueError:
                raise EngineError(f"shard {shard} doc {raw.doc_ix}: metadata line is not JSON") from None
            path, linenum = parsed.get("path"), parsed.get("linenum")
            metadata = parsed.get("metadata") or {}
        match_pos = needle = None
        window_start = 0
        if ptr is not None:
            m = self._maps_for(shard)
            local = raw.doc_ix - self._doc_base[shard]
            doc_start = int.from_bytes(m.offsets[8 * local:8 * local + 8], "little") + self.width
            match_pos = (ptr - doc_start) // self.width
            needle = int(raw.needle_offset)
            window_start = match_pos - needle
        return DocRecord(shard=shard, doc_ix=int(raw.doc_ix), doc_len=int(raw.doc_len), tokens=list(raw.token_ids),
                         window_start=window_start, rank=rank, match_pos=match_pos, needle_offset=needle,
                         path=path, linenum=linenum, metadata=metadata)

    def docs_by_ranks(self, requests: Sequence[tuple[int, int]], needle_len: int = 0,
                      max_ctx_len: int = 0) -> list[DocRecord]:
        """Documents holding the suffixes at (shard, rank); window = `max_ctx_len` tokens before the match
        and `needle_len + max_ctx_len` from it, clipped to the document. Ranks at a separator raise."""
        if needle_len < 0 or max_ctx_len < 0:
            raise ValueError("needle_len and max_ctx_len must be >= 0")
        reqs = []
        for shard, rank in requests:
            ptr = self.rank_to_ptr(shard, rank)
            if self.token_at(shard, ptr) == self.separator_id:
                raise ValueError(f"rank {rank} of shard {shard} points at a document separator, not into a document")
            cap = self.tok_cnt(shard)  # keeps ptr + width * (needle + ctx) far from u64 overflow
            reqs.append((shard, rank, ptr, min(needle_len, cap), min(max_ctx_len, cap)))
        out: list[DocRecord] = []
        for i in range(0, len(reqs), _DOC_BATCH):
            chunk = reqs[i:i + _DOC_BATCH]
            raws = self._cpp().get_docs_by_ranks_2(requests=[(s, r, n, c) for s, r, _, n, c in chunk])
            out.extend(self._record(s, raw, r, p) for (s, r, p, _, _), raw in zip(chunk, raws))
        return out

    def docs(self, shard: int, lo: int, hi: int, needle_len: int = 0, max_ctx_len: int = 0) -> list[DocRecord]:
        """Documents for ranks [lo, hi) of one shard (e.g. a `find` segment)."""
        self._check_shard(shard)
        if not (0 <= lo <= hi <= self.tok_cnt(shard)):
            raise ValueError(f"rank range [{lo}, {hi}) outside [0, {self.tok_cnt(shard)}] for shard {shard}")
        return self.docs_by_ranks([(shard, r) for r in range(lo, hi)], needle_len, max_ctx_len)

    def iter_matches(self, ids: Sequence[int], needle_len: int | None = None,
                     max_ctx_len: int = 0) -> Iterator[DocRecord]:
        """Every occurrence of `ids`, shard by shard in rank order (can be many: slice what you need)."""
        res = self.find(ids)
        n = len(ids) if needle_len is None else needle_len
        for s, (lo, hi) in enumerate(res["segment_by_shard"]):
            for start in range(lo, hi, _DOC_BATCH):
                yield from self.docs(s, start, min(hi, start + _DOC_BATCH), n, max_ctx_len)

    def doc(self, doc_ix: int, max_len: int | None = None) -> DocRecord:
        """Document number `doc_ix` (engine numbering, 0 .. n_docs-1), whole or its first `max_len` tokens."""
        if not (isinstance(doc_ix, int) and 0 <= doc_ix < self.n_docs):
            raise ValueError(f"doc_ix must be in [0, {self.n_docs}), got {doc_ix!r}")
        shard = bisect.bisect_right(self._doc_base, doc_ix) - 1  # every shard holds >= 1 document
        cap = self.tok_cnt(shard)
        n = cap if max_len is None else min(max(0, max_len), cap)
        raw = self._cpp().get_doc_by_ix_2(doc_ix=doc_ix, max_ctx_len=n)
        return self._record(shard, raw, None, None)

    # ------------------------------------------------------------------ comparison helpers

    def attribute(self, ids: Sequence[int], min_len: int = 1, max_cnt: int = 1_000_000) -> list[dict[str, Any]]:
        """infini-gram's own OLMoTrace span finder (for comparison only: at insertion rank 0 it skips both
        neighbours, so its spans can be shorter than the true longest match)."""
        r = self._cpp().attribute(input_ids=self._ids(ids), delim_ids=[], min_len=int(min_len),
                                  max_cnt=int(max_cnt), enforce_bow=False)
        return [{"l": int(s.l), "r": int(s.r), "length": int(s.length), "count": int(s.count)} for s in r.spans]
