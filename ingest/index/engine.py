"""`IndexEngine`: a checked, typed wrapper around infini-gram 2.6.0's C++ engine for v4 indexes.

Why not `infini_gram.engine.InfiniGramEngine`: its C++ asserts are compiled out, so a damaged or oddly
named index does not fail cleanly, it segfaults or silently returns wrong counts (a truncated `table.0`
opens fine and answers 0 for everything); its Python layer returns `{'error': ...}` dicts instead of
raising, and `get_docs_by_ranks` calls a C++ method that does not exist. This wrapper validates the
folder against its `lmaudit-index.json` manifest *before* the C++ engine maps any file, calls the C++
object directly, validates every argument (an out-of-range rank is a segfault, not an exception), turns
results into dataclasses, and reopens the engine when the process's measured mapped memory (resident
file pages + page tables, `ingest.index.memory`) passes a budget, because those only grow. Prefetching (madvise WILLNEED) is off by default: it helps single interactive queries on
cold disks but slows batch work.

Shard numbering: the engine sorts shard files by *string*, so with 11+ shards `tokenized.10` comes before
`tokenized.2`. `shard` in this module is always the engine's index; `shard_files(s)` maps it back.
"""

from __future__ import annotations

import bisect
import json
import mmap
import os
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from ingest.errors import UserError
from ingest.index.manifest import IndexManifest, check_index_path, ptr_size
from ingest.index.checks import IndexDamaged, index_damaged, validate_index_files
from ingest.index.tokenizer import TOKEN_WIDTH

_DOC_BATCH = 256  # the engine starts one thread per requested document: keep batches bounded
_DENSE_FIRST_MAX = 1 << 20  # (token, shard) pairs of the dense first-token table (16 MiB at most)


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


@dataclass
class QueryPlan:
    """One token sequence prepared for the compiled lookups (`plan_bytes`): its bytes `q` (uint8), the
    first-token rank range of every start in every shard (`flo`/`fhi`, (L, shards)) and, once
    `longest_matches_bytes(..., plan=)` ran, the insertion ranks of every start that had a full lookup
    (`hints`, -1 elsewhere): the hints `find_many_bytes` searches from; and then the longest match at every
    start as the kernel wrote it (`n`, int64; None before), which the tracer's compiled span steps read
    without converting the list back."""

    q: Any
    flo: Any
    fhi: Any
    hints: Any
    n: Any = None


@dataclass(frozen=True)
class _KernelMaps:
    """Per shard (tuples / arrays in engine order): uint8 views of `tokenized` and `table`, a uint64 view of
    `offset`, pointer widths, token and document counts, and the first engine document number."""

    tk: tuple
    tb: tuple
    ou: tuple
    pss: Any
    tok_cnts: Any
    n_docs: Any
    doc_base: Any


@dataclass
class WindowBatch:
    """Document windows of many ranks (`IndexEngine.windows_bytes`), as arrays: request i's window is
    `buf[boff[i]:boff[i + 1]]` (index bytes), in shard `shard[i]`, document `doc_ix[i]` (engine numbering;
    `local[i]` inside the shard) of `doc_len[i]` tokens, starting at token `window_start[i]` of it."""

    shard: Any
    local: Any
    doc_ix: Any
    doc_len: Any
    window_start: Any
    buf: Any
    boff: Any


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
    """Our own read-only maps of one shard, for rank -> pointer, raw token reads, byte-level searches and
    document windows.

    `sa` is a memoryview of the suffix array (None unless pointers are 4 or 8 bytes); `od`/`om` views of the
    document and metadata offsets (u64), `toks` a numpy view of the tokens; `metadata`/`metaoff`/`om` are
    None for an index without metadata. Views must be released before the maps can be closed (`close`)."""

    table: mmap.mmap
    tokens: mmap.mmap
    offsets: mmap.mmap
    ptr_size: int
    tok_cnt: int
    n_docs: int
    width: int
    metadata: mmap.mmap | None = None
    metaoff: mmap.mmap | None = None
    sa: Any = None
    od: Any = None
    om: Any = None
    toks: Any = None
    tk: Any = None  # uint8 views of tokenized / table, for the compiled searches (ingest.index.sa_search)
    tb: Any = None
    ou: Any = None  # a uint64 view of the document offsets, for the compiled windows (ingest.index.doc_windows)

    def __post_init__(self) -> None:
        import numpy as np

        # rank -> pointer: a native-endian view when the pointer width is a C type (the engine requires a
        # little-endian machine), else int.from_bytes on a slice
        little = sys.byteorder == "little"
        if self.ptr_size in (4, 8) and little:
            self.sa = memoryview(self.table).cast("I" if self.ptr_size == 4 else "Q")
        # offsets: memoryviews index to Python ints and bisect fast; numpy views on a big-endian host
        u64 = (lambda mm: memoryview(mm).cast("Q")) if little else (lambda mm: np.frombuffer(mm, dtype="<u8"))
        self.od = u64(self.offsets)
        self.toks = np.frombuffer(self.tokens, dtype=_NP_DTYPE[self.width])
        self.tk = np.frombuffer(self.tokens, dtype=np.uint8)
        self.tb = np.frombuffer(self.table, dtype=np.uint8)
        self.ou = np.frombuffer(self.offsets, dtype="<u8")
        if self.metaoff is not None:
            self.om = u64(self.metaoff)

    def close(self) -> None:
        # drop our numpy views first; a view still held elsewhere (another thread mid-read) keeps its map
        # alive until it is released, so close() may refuse (BufferError): the map then goes with the GC
        for view in (self.sa, self.od, self.om):
            if isinstance(view, memoryview):
                try:
                    view.release()
                except BufferError:
                    pass
        self.sa = self.od = self.om = self.toks = self.tk = self.tb = self.ou = None
        for m in (self.table, self.tokens, self.offsets, self.metadata, self.metaoff):
            if m is not None:
                try:
                    m.close()
                except BufferError:
                    pass


_NP_DTYPE = {1: "<u1", 2: "<u2", 4: "<u4"}


def _sa_search() -> Any:
    from ingest.index import sa_search

    return sa_search


def _common_prefix(a: bytes, b: bytes) -> int:
    """Length of the common prefix of two byte strings (bisection on slice equality: C-speed compares)."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n  # a[:lo] == b[:lo], a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid
    return lo


def _np_bytes(b: bytes) -> Any:
    """A read-only uint8 view of `b` (the query form of the compiled searches)."""
    import numpy as np

    return np.frombuffer(b, dtype=np.uint8)


def _map(path: Path) -> mmap.mmap:
    with open(path, "rb") as f:
        return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)


def engine_shard_order(n_shards: int) -> list[int]:
    """File shard numbers in the order the C++ engine loads them (sorted as strings)."""
    return sorted(range(n_shards), key=str)


class IndexEngine:
    """Count n-grams, find suffix-array ranges and fetch documents from one or more index folders."""

    def __init__(self, index_dirs: str | os.PathLike[str] | Sequence[str | os.PathLike[str]], *,
                 prefetch_depths: tuple[int, int, int] = (0, 0, 0), reopen_every: int | None = 1000,
                 memory_budget: int | None = None, load_to_ram: bool = False) -> None:
        """`prefetch_depths` = (ds, sa, od) madvise depths: (0, 0, 0) for batch work, (1, 3, 3) is
        infini-gram's interactive default. Every `reopen_every` queries the process's mapped memory is
        measured and the engine reopened if it exceeds `memory_budget` bytes (default
        `ingest.index.memory.default_budget()`; 0 reopens at every check). `reopen_every=None` never reopens
        inside a query (threads share the engine): the caller calls `reopen_if_over_budget()` between
        batches instead."""
        if isinstance(index_dirs, (str, os.PathLike)):
            index_dirs = [index_dirs]
        if not index_dirs:
            raise UserError("no index folder given")
        ds_d, sa_d, od_d = prefetch_depths
        if min(prefetch_depths) < 0 or sa_d < ds_d:
            raise ValueError("prefetch depths must be >= 0 with sa >= ds")
        # index_dirs hold the manifests; an attached prebuilt index keeps its shard files elsewhere
        # (manifest.data_dir, often read-only and shared): the engine and the maps read those
        self.index_dirs: list[str] = [os.path.abspath(d) for d in index_dirs]
        self.manifests: list[IndexManifest] = [IndexManifest.load(d) for d in self.index_dirs]
        self.data_dirs: list[str] = [check_index_path(m.shard_dir(d)) for d, m in zip(self.index_dirs, self.manifests)]
        for d, m in zip(self.data_dirs, self.manifests):
            validate_index_files(d, m)
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
        from ingest.index.memory import default_budget

        self.memory_budget = default_budget() if memory_budget is None else int(memory_budget)
        self.reopens = 0  # how many times the budget forced a reopen (for tests and benchmarks)
        self.load_to_ram = load_to_ram
        # (index_dir, file shard number, ShardInfo) in engine order
        self._shards = [(d, s, m.shards[s]) for d, m in zip(self.data_dirs, self.manifests)
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
        self._kmaps: _KernelMaps | None = None  # every shard's views as the kernels take them (_kernel_maps)
        # token id -> its suffix-array range in every shard (found once with the engine): the start range of
        # the byte-level binary searches below. The index never changes, so this survives reopen().
        self._first: dict[int, list[tuple[int, int]]] = {}
        self._first_dense: Any = None  # the same as a (vocab_size, shards, 2) int64 array, -1 = not yet (plan_bytes)
        # byte-level searches: compiled (ingest.index.sa_search) when numba loads, else pure Python.
        # None: decide at the first search; False forces pure Python (benchmarks, tests)
        self.compiled_search: bool | None = None
        self._queries = 0
        from ingest.index import sigbus

        sigbus.set_message(f"error: a file of index {', '.join(self.data_dirs)} shrank or was replaced while this "
                           "process read it (SIGBUS); rebuild or re-attach the index, then run the command again")
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
        return cls(self.data_dirs, eos, vocab, 4, self.load_to_ram, ds_d, sa_d, od_d, set(), 512, False, {})

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
        self._kmaps = None

    def __enter__(self) -> IndexEngine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _cpp(self) -> Any:
        if self._engine is None:
            raise EngineError("engine is closed; call reopen()")
        self._queries += 1
        if self.reopen_every and self._queries > self.reopen_every:
            self._queries = 1
            self.reopen_if_over_budget()
        return self._engine

    def over_budget(self) -> bool:
        """Whether this process's mapped memory (not only this engine's) exceeds `memory_budget`."""
        from ingest.index.memory import mapped_bytes

        if self.memory_budget <= 0:
            return True
        used = mapped_bytes()
        return used is not None and used > self.memory_budget

    def reopen_if_over_budget(self) -> bool:
        """Reopen when over budget; answers never change. Call it where no other thread uses the engine
        (e.g. between trace batches). True if it reopened."""
        if not self.over_budget():
            return False
        self.reopen()
        self.reopens += 1
        return True

    def _tick(self) -> None:
        """Count a query that only reads our maps (they grow page tables too): reopen when due."""
        self._cpp()

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

    def damaged(self, shard: int, role: str, what: str) -> IndexDamaged:
        """The one-line error for impossible values read from file `role`.s of engine shard `shard`."""
        d, s = self.shard_files(shard)
        return index_damaged(Path(d) / f"{role}.{s}", what)

    def _check_shard(self, shard: int) -> int:
        if not (isinstance(shard, int) and 0 <= shard < len(self._shards)):
            raise ValueError(f"shard must be in [0, {len(self._shards)}), got {shard!r}")
        return shard

    def _maps_for(self, shard: int) -> _ShardMaps:
        m = self._maps.get(shard)
        if m is None:
            d, s, info = self._shards[self._check_shard(shard)]
            folder = Path(d)
            # an empty metadata file cannot be mapped; the engine reads "" for every document then, as we do
            has_meta = (info.has_metadata and (folder / f"metadata.{s}").is_file()
                        and (folder / f"metadata.{s}").stat().st_size > 0)
            m = _ShardMaps(_map(folder / f"table.{s}"), _map(folder / f"tokenized.{s}"),
                           _map(folder / f"offset.{s}"), ptr_size(info.ds_bytes),
                           info.ds_bytes // self.width, info.n_docs, self.width,
                           _map(folder / f"metadata.{s}") if has_meta else None,
                           _map(folder / f"metaoff.{s}") if has_meta else None)
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
        segs = [(int(a), int(b)) for a, b in r.segment_by_shard]
        for shard, (lo, hi) in enumerate(segs):
            if not 0 <= lo <= hi <= self.tok_cnt(shard):
                raise self.damaged(shard, "table", f"a search returned ranks [{lo}, {hi}) of {self.tok_cnt(shard)}")
        return {"cnt": int(r.cnt), "segment_by_shard": segs}

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
        return self.lcp_at_rank_bytes(shard, rank, self.ids_bytes(ids))

    def ids_bytes(self, ids: Sequence[int]) -> bytes:
        """`ids` as the index stores them (little-endian, the index's token width): the form
        `lcp_at_rank_bytes` compares. Raises ValueError for ids outside the vocabulary or the separator."""
        import numpy as np

        a = np.asarray(ids)
        if a.size and a.dtype.kind in "iu":  # one vectorized range check (a list of Python ints: the common case)
            lo, hi = int(a.min()) if a.dtype.kind == "i" else 0, int(a.max())  # unsigned: no minimum to check
            if lo < 0 or hi >= self.separator_id:
                raise ValueError(f"token ids must be in [0, {self.separator_id}) (the separator is excluded), got "
                                 f"{lo}..{hi}")
            return a.astype(_NP_DTYPE[self.width]).tobytes()
        q = self._ids(ids)
        return np.asarray(q, dtype=_NP_DTYPE[self.width]).tobytes()

    def lcp_at_rank_bytes(self, shard: int, rank: int, qbytes: bytes) -> int:
        """`lcp_at_rank` for a query already in index byte form (`ids_bytes`): compares raw bytes, so no
        token conversion. A query never holds the separator, so the match stops at the document end."""
        m = self._maps_for(shard)
        if not (0 <= rank < m.tok_cnt):
            raise ValueError(f"rank must be in [0, {m.tok_cnt}) for shard {shard}, got {rank}")
        ptr = self._ptr(m, rank)
        return _common_prefix(m.tokens[ptr:ptr + len(qbytes)], qbytes) // self.width

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

    # ------------------------------------------------------------------ byte-level lookups
    #
    # `find`/`count` of the C++ engine start one OS thread per shard for every call (tens of microseconds,
    # and on a busy machine each new thread waits for a core). The tracer makes hundreds of lookups per
    # generation, so these do the same binary search in this thread on our maps of the shard files: the
    # query is compared as raw little-endian bytes with the suffix, exactly as the engine compares it, and
    # the search starts from the query's first-token range (cached), so it needs log2(count of that
    # token) steps. Queries are `ids_bytes(ids)`; results equal `find` / `count` / `longest_prefix_len`.
    # The searches themselves run compiled (`ingest.index.sa_search`, numba, GIL released, so threads
    # search in parallel); without numba the pure-Python `_bound` / `_bound_near` below give the same
    # answers holding the GIL. They do not count towards `reopen_every` (the memory check); `reopen()`
    # releases their maps too.

    def _kernels(self) -> Any:
        """The compiled search module, or None for the pure-Python searches (warns once if numba is missing)."""
        if self.compiled_search is True:
            return _sa_search()
        if self.compiled_search is False:
            return None
        from ingest.index import sa_search

        if sa_search.available():
            if self.compiled_search is None:  # numba is loaded: the SIGBUS handler costs nothing more
                from ingest.index import sigbus

                sigbus.install()
            self.compiled_search = True
            return sa_search
        sa_search.warn_unavailable()
        self.compiled_search = False
        return None

    def _first_ranges(self, qbytes: bytes) -> list[tuple[int, int]]:
        t = int.from_bytes(qbytes[:self.width], "little")
        segs = self._first.get(t)
        if segs is None:
            k = self._kernels()
            if k is None:
                segs = self.find([t])["segment_by_shard"]
            else:
                # the compiled search over the whole suffix array gives the engine's `find` ranges, and reads a
                # damaged pointer as a short suffix where the C++ engine would read out of bounds (a crash)
                q = _np_bytes(t.to_bytes(self.width, "little"))
                segs = []
                for s in range(self.num_shards):
                    m = self._maps_for(s)
                    lo, hi = k.find_range(m.tk, m.tb, m.ptr_size, q, 0, m.tok_cnt, -1)
                    segs.append((int(lo), int(hi)))
            self._first[t] = segs
        return segs

    @staticmethod
    def _bound(m: _ShardMaps, qbytes: bytes, lo: int, hi: int, upper: bool) -> int:
        """First rank in [lo, hi) whose suffix (its first len(qbytes) bytes) is >= qbytes, or > qbytes
        when `upper`; hi if none."""
        toks, nb, sa = m.tokens, len(qbytes), m.sa
        if sa is None:
            table, ps = m.table, m.ptr_size
        while lo < hi:
            mid = (lo + hi) >> 1
            if sa is not None:
                p = sa[mid]
            else:
                a = mid * ps
                p = int.from_bytes(table[a:a + ps], "little")
            cand = toks[p:p + nb]
            if cand < qbytes or (upper and cand == qbytes):
                lo = mid + 1
            else:
                hi = mid
        return lo

    @staticmethod
    def _before(m: _ShardMaps, qbytes: bytes, rank: int, upper: bool) -> bool:
        """The suffix at `rank` sorts before the query (lower bound), or before or equal (upper)."""
        a = rank * m.ptr_size
        p = m.sa[rank] if m.sa is not None else int.from_bytes(m.table[a:a + m.ptr_size], "little")
        cand = m.tokens[p:p + len(qbytes)]
        return cand < qbytes or (upper and cand == qbytes)

    def _bound_near(self, m: _ShardMaps, qbytes: bytes, lo: int, hi: int, upper: bool, hint: int) -> int:
        """`_bound` when the answer is known to be <= hint (lower bound) or >= hint (upper bound): gallop
        away from the hint, then bisect. log2(count) steps instead of log2(hi - lo)."""
        if upper:
            a, b, step = max(hint, lo), hi, 1
            while a < b:
                p = a + step - 1
                if p >= b:
                    break
                if self._before(m, qbytes, p, True):
                    a, step = p + 1, step * 2
                else:
                    b = p
                    break
        else:
            a, b, step = lo, min(hint, hi), 1
            while a < b:
                p = b - step
                if p < a:
                    break
                if self._before(m, qbytes, p, False):
                    a = p + 1
                    break
                b, step = p, step * 2
        return self._bound(m, qbytes, a, b, upper)

    def _ptr(self, m: _ShardMaps, rank: int) -> int:
        if m.sa is not None:
            return m.sa[rank]
        a = rank * m.ptr_size
        return int.from_bytes(m.table[a:a + m.ptr_size], "little")

    def find_bytes(self, qbytes: bytes, hints: Sequence[int | None] | None = None) -> FindResult:
        """`find` of a query in byte form (`ids_bytes`), without engine threads. Non-empty queries only.

        `hints` (optional, per shard): the insertion rank of a longer query that starts with this one, as
        `longest_prefix_bytes` reports it: the range is then searched outwards from it (few steps for a
        rare query)."""
        if not qbytes:
            raise ValueError("empty query: use find([])")
        segs = []
        cnt = 0
        k = self._kernels()
        q = None
        for s, (lo, hi) in enumerate(self._first_ranges(qbytes)):
            if lo < hi and len(qbytes) > self.width:
                m = self._maps_for(s)
                h = hints[s] if hints is not None else None
                if k is not None:
                    if q is None:
                        q = _np_bytes(qbytes)
                    lo, hi = k.find_range(m.tk, m.tb, m.ptr_size, q, lo, hi, -1 if h is None else h)
                elif h is None:
                    lo = self._bound(m, qbytes, lo, hi, False)
                    hi = self._bound(m, qbytes, lo, hi, True)
                else:
                    lo, hi = self._bound_near(m, qbytes, lo, hi, False, h), self._bound_near(m, qbytes, lo, hi, True, h)
            segs.append((lo, hi))
            cnt += hi - lo
        return {"cnt": cnt, "segment_by_shard": segs}

    def count_bytes(self, qbytes: bytes, hints: Sequence[int | None] | None = None) -> int:
        """`count` of a query in byte form (`hints` as for `find_bytes`)."""
        return self.find_bytes(qbytes, hints)["cnt"]

    def occurs_bytes(self, qbytes: bytes) -> bool:
        """count > 0, stopping at the first shard that holds the query (one binary search per shard)."""
        if not qbytes:
            raise ValueError("empty query")
        nb = len(qbytes)
        k = self._kernels()
        q = _np_bytes(qbytes) if k is not None and nb > self.width else None
        for s, (lo, hi) in enumerate(self._first_ranges(qbytes)):
            if lo == hi:
                continue
            if nb == self.width:
                return True
            m = self._maps_for(s)
            if q is not None:
                if k.occurs(m.tk, m.tb, m.ptr_size, q, lo, hi):
                    return True
                continue
            r = self._bound(m, qbytes, lo, hi, False)
            if r < hi:
                p = self._ptr(m, r)
                if m.tokens[p:p + nb] == qbytes:
                    return True
        return False

    def longest_prefix_bytes(self, qbytes: bytes, hints_out: list[int | None] | None = None) -> int:
        """`longest_prefix_len` (in tokens) of a query in byte form: the insertion rank's two neighbours in
        every shard, rank 0 and the end included. Only suffixes inside the first token's range can share a
        token with the query, so the neighbours are looked at inside that range.

        `hints_out` (a list) receives per shard the insertion rank found (None where no search ran): the
        `hints` of `find_bytes` for any prefix of this query."""
        if hints_out is not None:
            hints_out[:] = [None] * self.num_shards
        if not qbytes:
            return 0
        nb, w = len(qbytes), self.width
        best = 0
        k = self._kernels()
        q = _np_bytes(qbytes) if k is not None and nb > w else None
        for s, (lo, hi) in enumerate(self._first_ranges(qbytes)):
            if lo == hi:
                continue
            if nb == w:
                return 1
            m = self._maps_for(s)
            if q is not None:
                r, n = k.longest_prefix(m.tk, m.tb, m.ptr_size, q, lo, hi)
                if hints_out is not None:
                    hints_out[s] = r
                if n == nb:
                    return nb // w
                if n // w > best:
                    best = n // w
                continue
            r = self._bound(m, qbytes, lo, hi, False)
            if hints_out is not None:
                hints_out[s] = r
            toks = m.tokens
            for rank in (r - 1, r):
                if lo <= rank < hi:
                    p = self._ptr(m, rank)
                    n = _common_prefix(toks[p:p + nb], qbytes)
                    if n == nb:
                        return nb // w
                    if n // w > best:
                        best = n // w
        return best

    def plan_bytes(self, qbytes: bytes) -> QueryPlan | None:
        """A `QueryPlan` of a token sequence in byte form (`ids_bytes`), or None when the compiled searches
        are off (then use the per-query methods)."""
        k = self._kernels()
        if k is None:
            return None
        import numpy as np

        w, n_shards = self.width, self.num_shards
        L = len(qbytes) // w
        # first-token ranges of every start, from a dense per-token table filled on first use (the same
        # ranges as `_first_ranges`; ids past the vocabulary size, if any, go through the dict)
        dense = self._first_dense
        if dense is None and self.vocab_size * n_shards <= _DENSE_FIRST_MAX:
            dense = self._first_dense = np.full((max(self.vocab_size, 1), n_shards, 2), -1, dtype=np.int64)
        q = _np_bytes(qbytes)
        if dense is not None:
            # one compiled pass reads every start's row; a token whose row is not filled yet (first use, or
            # another thread writing it: rows are only ever written whole with the same values) is looked up
            # and the pass repeats from there
            flo = np.empty((L, n_shards), dtype=np.int64)
            fhi = np.empty((L, n_shards), dtype=np.int64)
            at = k.plan_rows(dense, q, w, flo, fhi)
            while at >= 0:
                t = int.from_bytes(qbytes[at * w:(at + 1) * w], "little")
                if t >= dense.shape[0]:
                    break
                dense[t] = self._first_ranges(t.to_bytes(w, "little"))
                at = k.plan_rows(dense, q, w, flo, fhi)
            if at < 0:
                return QueryPlan(q=q, flo=flo, fhi=fhi, hints=np.full((L, n_shards), -1, dtype=np.int64))
        # ids past the dense table (or no table): one (cached) lookup per distinct token
        toks = np.frombuffer(qbytes, dtype=_NP_DTYPE[w]).astype(np.int64)
        uniq, inv = np.unique(toks, return_inverse=True)
        table = np.array([self._first_ranges(int(t).to_bytes(w, "little")) for t in uniq.tolist()],
                         dtype=np.int64).reshape(len(uniq), n_shards, 2)
        rows = table[inv.reshape(-1)]
        return QueryPlan(q=q, flo=np.ascontiguousarray(rows[:, :, 0]),
                         fhi=np.ascontiguousarray(rows[:, :, 1]), hints=np.full((L, n_shards), -1, dtype=np.int64))

    def _kernel_maps(self) -> _KernelMaps:
        """Every shard's views and sizes as the kernels take them (made once per open: `close()` drops them)."""
        km = self._kmaps
        if km is None:
            import numpy as np

            maps = [self._maps_for(s) for s in range(self.num_shards)]
            km = self._kmaps = _KernelMaps(
                tk=tuple(m.tk for m in maps), tb=tuple(m.tb for m in maps), ou=tuple(m.ou for m in maps),
                pss=np.array([m.ptr_size for m in maps], dtype=np.int64),
                tok_cnts=np.array([m.tok_cnt for m in maps], dtype=np.int64),
                n_docs=np.array([m.n_docs for m in maps], dtype=np.int64),
                doc_base=np.asarray(self._doc_base, dtype=np.int64))
        return km

    def longest_matches_bytes(self, qbytes: bytes, plan: QueryPlan | None = None, want_hints: bool = True
                              ) -> tuple[list[int], tuple[int, int, int, int], dict[int, list[int | None]]] | None:
        """`ingest.trace.matching.longest_matches` of a whole token sequence (byte form) in one compiled,
        GIL-free call: (n(b) for every start, (starts, skipped_by_bound, probes, full_lookups), per-shard
        insertion ranks of every start that had a full lookup). None when the compiled searches are off:
        the caller then runs the Python loop over `occurs_bytes` / `longest_prefix_bytes` (same answers).
        `plan` (from `plan_bytes(qbytes)`) is used, and receives the insertion ranks in `plan.hints`; with
        `want_hints=False` the third item is empty (a caller that searches through the plan needs no dict)."""
        k = self._kernels()
        if k is None:
            return None
        import numpy as np

        if plan is None:
            plan = self.plan_bytes(qbytes)
        L = len(qbytes) // self.width
        flo, fhi, hints = plan.flo, plan.fhi, plan.hints
        out = np.zeros(L, dtype=np.int64)
        looked = np.zeros(L, dtype=np.bool_)
        stats = np.zeros(4, dtype=np.int64)
        if L:
            km = self._kernel_maps()
            k.longest_matches(km.tk, km.tb, km.pss, plan.q, self.width, flo, fhi, out, hints, looked, stats)
        plan.n = out
        if not want_hints:
            return out.tolist(), tuple(stats.tolist()), {}
        at = np.flatnonzero(looked)
        found = {b: [None if x < 0 else x for x in row] for b, row in zip(at.tolist(), hints[at].tolist())}
        return out.tolist(), tuple(int(x) for x in stats), found

    def find_many_bytes(self, plan: QueryPlan, starts: Sequence[int], ends: Sequence[int]) -> tuple[list[int], Any, Any]:
        """`find_bytes` of every piece q[starts[i]:ends[i]] (tokens, non-empty) of a planned sequence in one
        compiled call, each searched from the hints of its start: (counts, lo, hi) with lo/hi[i, s] the rank
        range in shard s (numpy arrays). The same ranges as `find_bytes(piece, hints of its start)`."""
        import numpy as np

        k = self._kernels()
        qb = np.array(starts, dtype=np.int64)
        qe = np.array(ends, dtype=np.int64)
        lo = np.empty((qb.size, self.num_shards), dtype=np.int64)
        hi = np.empty_like(lo)
        cnt = np.zeros(qb.size, dtype=np.int64)
        if qb.size:
            km = self._kernel_maps()
            if qe.size != qb.size or not k.find_many(km.tk, km.tb, km.pss, plan.q, self.width, plan.flo, plan.fhi,
                                                     qb, qe, plan.hints, lo, hi, cnt):
                raise ValueError("pieces must be non-empty and inside the planned sequence")
        return cnt.tolist(), lo, hi

    def windows_bytes(self, plan: QueryPlan, shards: Sequence[int], ranks: Sequence[int], starts: Sequence[int],
                      ends: Sequence[int], max_ctx_len: int) -> WindowBatch | None:
        """The windows `docs_by_ranks(..., needle_len=ends[i] - starts[i], max_ctx_len, found=True)` would give
        for the suffixes at (shards[i], ranks[i]), found by searching q[starts[i]:ends[i]] of a planned
        sequence, in one compiled call (`ingest.index.doc_windows`): as arrays, without metadata (see
        `doc_metadata`). Also checks that each window holds that piece where the rank says. None when any
        request fails a check (or the kernels are off): `docs_by_ranks` then raises the error."""
        import numpy as np

        from ingest.index import doc_windows as dw

        if self._kernels() is None or not dw.available() or max_ctx_len < 0:
            return None
        n = len(ranks)
        sh = np.asarray(shards, dtype=np.int64)  # a shard out of range: status BAD_SHARD from the kernel
        if n:
            self._tick()
        km = self._kernel_maps()
        out = np.zeros((n, 6), dtype=np.int64)
        status, _, buf, boff = dw.windows(
            km.tk, km.tb, km.ou, km.pss, km.tok_cnts, km.n_docs, self.width, self.separator_id, sh,
            np.asarray(ranks, dtype=np.int64), plan.q, np.asarray(starts, dtype=np.int64),
            np.asarray(ends, dtype=np.int64), int(max_ctx_len), True, out)
        if status:
            return None
        w = self.width
        return WindowBatch(shard=sh, local=out[:, 0], doc_ix=km.doc_base[sh] + out[:, 0],
                           doc_len=(out[:, 2] - out[:, 1]) // w, window_start=(out[:, 3] - out[:, 1]) // w, buf=buf,
                           boff=boff)

    def doc_metadata(self, shard: int, local: int) -> tuple[str | None, int | None, dict[str, Any]]:
        """(path, linenum, metadata) of document `local` of engine shard `shard`, as `docs_by_ranks` reads them."""
        m = self._maps_for(shard)
        path = linenum = None
        metadata: dict[str, Any] = {}
        if m.om is not None:
            a = int(m.om[local])
            b = int(m.om[local + 1]) if local + 1 < m.n_docs else len(m.metadata)
            if not 0 <= a <= b <= len(m.metadata):
                raise self.damaged(shard, "metaoff", f"document {local}'s metadata line [{a}, {b}) lies outside "
                                                     f"metadata.{self.shard_files(shard)[1]}")
            line = m.metadata[a:b]
            if line:
                try:  # strict UTF-8, as the engine's std::string -> str conversion
                    parsed = json.loads(line.decode("utf-8"))
                except (ValueError, RecursionError):
                    parsed = None
                if not isinstance(parsed, dict):
                    raise self.damaged(shard, "metadata", f"document {local}'s metadata line is not a JSON object")
                path, linenum = parsed.get("path"), parsed.get("linenum")
                metadata = parsed.get("metadata") or {}
        return path, linenum, metadata

    # ------------------------------------------------------------------ documents

    def _record(self, shard: int, raw: Any, rank: int | None, ptr: int | None) -> DocRecord:
        meta_raw = raw.metadata
        path = linenum = None
        metadata: dict[str, Any] = {}
        if meta_raw:
            try:
                parsed = json.loads(meta_raw)
            except (ValueError, RecursionError):
                parsed = None
            if not isinstance(parsed, dict):
                raise self.damaged(shard, "metadata", f"document {raw.doc_ix}'s metadata line is not a JSON object")
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
                      max_ctx_len: int = 0, *, native: bool = False, found: bool = False) -> list[DocRecord]:
        """Documents holding the suffixes at (shard, rank); window = `max_ctx_len` tokens before the match
        and `needle_len + max_ctx_len` from it, clipped to the document. Ranks at a separator raise
        ValueError, or `IndexDamaged` with `found` (the ranks come from a search for a non-empty query, which
        never ends at a separator in a sound index). A pointer outside the token file raises `IndexDamaged`.

        Windows and metadata are read from our own maps of the shard files (offset, tokenized, metaoff,
        metadata): the same records as the engine's `get_docs_by_ranks_2` (`native=True`), which starts
        one OS thread per requested document (~1.25 ms per call of 10 documents)."""
        if needle_len < 0 or max_ctx_len < 0:
            raise ValueError("needle_len and max_ctx_len must be >= 0")
        reqs = []
        for shard, rank in requests:
            ptr = self.rank_to_ptr(shard, rank)
            if ptr >= self.tok_cnt(shard) * self.width or ptr % self.width:
                raise self.damaged(shard, "table", f"rank {rank} points at byte {ptr}, outside the tokens or off a "
                                                   "token boundary")
            if self.token_at(shard, ptr) == self.separator_id:
                if found:
                    raise self.damaged(shard, "table", f"rank {rank}, found by a search, points at a document "
                                                       "separator")
                raise ValueError(f"rank {rank} of shard {shard} points at a document separator, not into a document")
            cap = self.tok_cnt(shard)  # keeps ptr + width * (needle + ctx) far from u64 overflow
            reqs.append((shard, rank, ptr, min(needle_len, cap), min(max_ctx_len, cap)))
        out: list[DocRecord] = []
        if not native:
            if reqs:
                self._tick()
            return [self._window(s, r, p, n, c) for s, r, p, n, c in reqs]
        for i in range(0, len(reqs), _DOC_BATCH):
            chunk = reqs[i:i + _DOC_BATCH]
            raws = self._cpp().get_docs_by_ranks_2(requests=[(s, r, n, c) for s, r, _, n, c in chunk])
            out.extend(self._record(s, raw, r, p) for (s, r, p, _, _), raw in zip(chunk, raws))
        return out

    def _window(self, shard: int, rank: int, ptr: int, needle_len: int, max_ctx_len: int) -> DocRecord:
        """What `get_doc_by_ptr_2` + `_record` return, computed from our maps (same arithmetic)."""
        m = self._maps_for(shard)
        w = self.width
        local = bisect.bisect_right(m.od, ptr) - 1  # the last document starting <= ptr
        # offsets are spot-checked at open; what this lookup uses must still make sense, else the window
        # would be another document's text (or nothing) and the row would name the wrong document
        sep_at = int(m.od[local]) if local >= 0 else -1
        doc_end = int(m.od[local + 1]) if 0 <= local and local + 1 < m.n_docs else m.tok_cnt * w
        if not (0 <= sep_at < ptr < doc_end <= m.tok_cnt * w) or sep_at % w or m.toks[sep_at // w] != self.separator_id:
            raise self.damaged(shard, "offset", f"no document of the {m.n_docs} holds byte {ptr} (document starts "
                                                "out of order, out of range or not at a separator)")
        doc_start = sep_at + w  # skip the separator
        disp_start = max(doc_start, 0 if ptr < w * max_ctx_len else ptr - w * max_ctx_len)
        disp_end = min(doc_end, ptr + w * (needle_len + max_ctx_len))
        path, linenum, metadata = self.doc_metadata(shard, local)
        match_pos = (ptr - doc_start) // w
        needle = (ptr - disp_start) // w
        return DocRecord(shard=shard, doc_ix=self._doc_base[shard] + local, doc_len=(doc_end - doc_start) // w,
                         tokens=m.toks[disp_start // w:disp_end // w].tolist(), window_start=match_pos - needle,
                         rank=rank, match_pos=match_pos, needle_offset=needle, path=path, linenum=linenum,
                         metadata=metadata)

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
