"""SimpleTrace for one generation: spans, documents, tiers, nv-recall, duplication counts.

The steps follow docs/propme-method.md, section 2. One `Tracer` holds an open index and the index tokenizer; it
can be called from several threads. With an `IndexEngine`, numba and a tokenizer that decodes by joining token
bytes (ByteLevel BPE, bytes), the work of a trace runs in a few compiled, GIL-free calls: the first-token
ranges of every start (`plan_bytes`), the longest match at every start (`IndexEngine.longest_matches_bytes`),
the texts of the maximal spans (`windowkernel.decode_pieces`), the searches of every span to document and
count (`find_many_bytes`), the picking of each span's occurrences (`windowkernel.pick_requests`, with the
generation's RNG draws: `rngkernel`, Python's Mersenne Twister and `Random.sample`), every document window (`windows_bytes`, ingest/index/doc_windows.py), keeping
one window per document and per distinct window (`dedup_requests`), and the decoding, match tier and
nv-recall of every distinct window (`windowkernel.scan_windows`, ASCII windows and non-ASCII ones made of
`normalize.plain_chars` alike), the maximal spans and their unigram scores (`spankernel`) and every row
key, span and span-document ids alike, in one call per kind (`keykernel`, BLAKE2b); the generation's
normalization (ASCII) and the tokenizer's encode release the GIL too. Python keeps the glue and builds the
output rows (dicts, metadata JSON cached per document, each window's text as a str), plus what the kernels
leave to it exactly: windows that are not valid UTF-8 (decoded by the tokenizer) and the tier and nv-recall
words of windows with other non-ASCII characters. That is ~17% of a trace's CPU: 2 threads give ~1.75x
(Amdahl's bound ~1.7x) and worker processes still scale further than threads (BENCHMARKS.md, "Threads and
the GIL: rows and keys in one call"). Any other engine or
tokenizer, or numba missing, takes the Python path step by step (same rows: tests/python/test_trace_fast.py).
Output rows use the lake's column names so the batch runner can write them as they are.

Speed without changing any output (benchmarks/trace_bench.py, BENCHMARKS.md): the generation's ids are
converted to index bytes once; counts of spans reuse the insertion ranks found in step 2 as search hints;
each distinct window is decoded, tiered and scored once per generation; the generation is normalized once;
ByteLevel tokenizers decode through a byte table. A failed check of a window (a damaged index) reruns the
documents step in Python, which raises the one-line error that names the file.
"""

from __future__ import annotations

import hashlib
import inspect
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from operator import attrgetter, itemgetter
from typing import Any

import numpy as np

from ingest.lake import make_key, text_hash
from ingest.trace.matching import LookupStats, longest_matches, maximal_spans
from ingest.trace.normalize import normalize_document, normalize_words, plain_chars
from ingest.trace.nvrecall import FIXED_PARAMS, NvResult, PreparedGeneration, nv_recall_window
from ingest.trace.params import TraceParams
from ingest.trace import keykernel, rngkernel, spankernel, tierkernel
from ingest.trace import windowkernel as wk
from ingest.trace.tierkernel import normalized_holds

_SENTENCE_END = (".", "!", "?")
_META_CACHE_CHARS = 32 << 20  # metadata JSON the tracer keeps formatted (`Tracer._doc_fields`)


@dataclass
class TraceOutput:
    spans: list[dict[str, Any]] = field(default_factory=list)
    documents: list[dict[str, Any]] = field(default_factory=list)
    counts: list[dict[str, Any]] = field(default_factory=list)
    # the `traced_generations` row: which text was traced and its length in index tokens, the length every
    # metric uses (FMR20/50, K), whatever the model's own tokenizer counted
    generation: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class _Span:
    start: int
    end: int
    score: float = 0.0
    count: int = 0
    kept: bool = False
    merged: bool = False
    is_full: bool = False

    @property
    def length(self) -> int:
        return self.end - self.start


_BY_SCORE = attrgetter("score", "start")  # sort keys read in C, not by a Python lambda per span
_BY_START = attrgetter("start")
_EMPTY = np.zeros(0, dtype=np.uint8)
# the ASCII characters str.split() splits on (str.isspace: \t \n \v \f \r, \x1c-\x1f and the space)
_ASCII_SPACE = np.array([chr(c).isspace() for c in range(256)], dtype=np.bool_) & (np.arange(256) < 128)
_PARAMS0 = np.zeros(6, dtype=np.int64)
_TIERS = {1: "exact_full_raw", 2: "exact_full_normalized", 3: "partial", 0: None}
_TIER_CODES = {v: k for k, v in _TIERS.items()}


class _Gen:
    """One generation being traced, with what several steps reuse: its ids (and their index byte form, for
    the engine's byte-level lookups), its normalized forms, and the windows already seen (decoded text,
    tier inputs, nv-recall) keyed by (shard, doc_ix, window start, window length)."""

    def __init__(self, engine, text: str, ids: list[int], arr: Any = None):
        self.text, self.ids = text, ids
        self.bytes_ok = hasattr(engine, "ids_bytes") and hasattr(engine, "find_bytes")
        self.qb = engine.ids_bytes(ids if arr is None else arr) if self.bytes_ok else b""
        self.w = engine.width if self.bytes_ok else 0
        self._norm_doc: str | None = None
        self._words: list[str] | None = None
        self._squeezed: str | None = None
        self._nv: PreparedGeneration | None = None
        self._norm_bytes: bytes | None = None
        self._norm_arr: Any = None  # ASCII text: the compiled normalization's bytes (`_norm_array`)
        # the compiled path (`Tracer._documents_batch`): the engine's QueryPlan of the ids, or None
        self.plan = engine.plan_bytes(self.qb) if self.bytes_ok and hasattr(engine, "plan_bytes") else None
        self.windows: dict[tuple[int, int, int, int], list[Any]] = {}
        self.hints: dict[int, list[int | None]] = {}  # start -> insertion ranks of ids[start:] (step 2)
        self.span_text: dict[tuple[int, int], str] = {}
        self.dup: dict[int, tuple[Any, ...]] = {}  # id(span) -> step 9's (trims, counts), see _count_spans
        self.extra_counts: list[int] | None = None  # counts of `_count_plan`'s queries, searched with step 6's

    @property
    def norm_doc(self) -> str:
        """`normalize_document(text)`; for ASCII text by the compiled normalization (the same string:
        tests/python/test_trace_nogil.py), which releases the GIL where four regex passes held it."""
        if self._norm_doc is None:
            arr = self._norm_array()
            self._norm_doc = normalize_document(self.text) if arr is None else arr.tobytes().decode("ascii")
        return self._norm_doc

    def _norm_array(self) -> Any:
        """For ASCII text, when the kernel loads: `normalize_document(text)`'s bytes as the compiled
        normalization writes them (uint8), which the window scan reads as they are; else None."""
        if self._norm_arr is None and self.text.isascii() and tierkernel.available():
            self._norm_arr = tierkernel.normalize_ascii(np.frombuffer(self.text.encode("ascii"), dtype=np.uint8))
        return self._norm_arr

    def normalized_in(self, window: str, raw: bytes | None = None) -> bool:
        """The normalized generation occurs in the normalized window (the exact_full_normalized tier); ASCII
        and NFKC-normal windows are normalized by the compiled scan (`ingest.trace.tierkernel`, GIL
        released). `raw`: the window's UTF-8 bytes, when known."""
        if self._norm_bytes is None:
            self._norm_bytes = self.norm_doc.encode("utf-8")
        held = normalized_holds(self._norm_bytes, window, raw)
        return self.norm_doc in normalize_document(window) if held is None else held

    def maybe_in(self, window: str) -> bool:
        """False only when the normalized generation cannot occur in the normalized window, without
        normalizing the window. For an ASCII window normalize_document changes whitespace only (NFKC is
        the identity on ASCII), so with all whitespace removed from both, the normalized generation must
        still be a substring of the window."""
        if not window.isascii():
            return True
        if self._squeezed is None:
            self._squeezed = "".join(self.norm_doc.split())
        return self._squeezed in "".join(window.split())

    @property
    def gen_bytes(self) -> Any:
        """The text's UTF-8 bytes (lone surrogates kept: they match no decoded window, as in Python)."""
        return np.frombuffer(self.text.encode("utf-8", "surrogatepass"), dtype=np.uint8)

    @property
    def norm_bytes(self) -> Any:
        arr = self._norm_array()  # ASCII: the kernel's bytes, without a round trip through str
        return np.frombuffer(self.norm_doc.encode("utf-8", "surrogatepass"), dtype=np.uint8) if arr is None else arr

    @property
    def squeezed_bytes(self) -> Any:
        """The normalized text without whitespace (`maybe_in`'s prefilter), UTF-8. ASCII: the normalized
        bytes less those `str.split()` splits on (`_ASCII_SPACE`), which is `"".join(norm_doc.split())`."""
        arr = self._norm_array()
        if arr is not None:
            return arr[~_ASCII_SPACE[arr]]
        if self._squeezed is None:
            self._squeezed = "".join(self.norm_doc.split())
        return np.frombuffer(self._squeezed.encode("utf-8", "surrogatepass"), dtype=np.uint8)

    @property
    def words(self) -> list[str]:
        if self._words is None:
            self._words = normalize_words(self.text)
        return self._words

    def nv(self, variant: str) -> PreparedGeneration:
        """The generation's words as the compiled nv-recall reads them (made once)."""
        if self._nv is None:
            self._nv = PreparedGeneration(self.words, FIXED_PARAMS if variant == "fixed" else None)
        return self._nv


def _fast_decoder(tok):
    """`tok.decode`, faster where that is provably the same text.

    For a `tokenizers` tokenizer whose decoder is exactly ByteLevel (GPT-2 style), decoding is: each token's
    characters mapped back to bytes, all bytes joined, UTF-8 (lossy). We keep each token's bytes in a table
    and join them; when the joined bytes are valid UTF-8 the text is the same, otherwise (a window cut inside
    a character) the backend decodes. The table is checked against the backend on every single token and on
    multi-byte text before it is used. Other tokenizers: the backend (or UTF-8 bytes) directly, skipping only
    `decode`'s per-call conversion of every id to int (our ids already are Python ints)."""
    return _decoder_and_table(tok)[0]


def _decoder_and_table(tok) -> tuple[Any, list[bytes] | None]:
    """(`_fast_decoder(tok)`, each token's bytes when decoding is "join the bytes, then UTF-8" for valid
    UTF-8, else None): the table the compiled window scan decodes with (`ingest.trace.windowkernel`)."""
    from ingest.index.tokenizer import BytesTokenizer, HFTokenizer

    backend = getattr(tok, "_backend", None)
    if type(tok) is BytesTokenizer:
        return (lambda ids: bytes(ids).decode("utf-8", errors="replace")), [bytes([i]) for i in range(256)]
    if type(tok) is not HFTokenizer or backend is None:
        return tok.decode, None

    def slow(ids):
        return backend.decode(ids, skip_special_tokens=False)

    table = _byte_level_table(backend)
    if table is None:
        return slow, None

    def fast(ids):
        try:
            if len(ids) > 1:
                return b"".join(itemgetter(*ids)(table)).decode("utf-8")
            return table[ids[0]].decode("utf-8") if ids else ""
        except (UnicodeDecodeError, IndexError, TypeError):
            return slow(ids)

    return fast, table


def _byte_level_table(backend) -> list[bytes] | None:
    """Bytes of every token id for a ByteLevel decoder, or None when the tokenizer is not one or any check
    against the backend fails."""
    import json

    try:
        if json.loads(backend.to_str()).get("decoder", {}).get("type") != "ByteLevel":
            return None
        size = backend.get_vocab_size(with_added_tokens=True)
        size = max(size, max(backend.get_vocab(with_added_tokens=True).values(), default=-1) + 1)
    except Exception:  # noqa: BLE001 - an unusual tokenizer: no fast path
        return None
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\xa1"), ord("\xac") + 1)) \
        + list(range(ord("\xae"), ord("\xff") + 1))
    cs = bs[:]
    k = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + k)
            k += 1
    char_bytes = {chr(c): b for b, c in zip(bs, cs)}
    table: list[bytes] = []
    for t in range(size):
        piece = backend.id_to_token(t)
        if piece is None:
            table.append(b"")
        elif all(c in char_bytes for c in piece):
            table.append(bytes(char_bytes[c] for c in piece))
        else:
            table.append(piece.encode("utf-8"))
    for t, raw in enumerate(table):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            continue  # a piece of a multi-byte character: checked in context below
        if backend.decode([t], skip_special_tokens=False) != text:
            return None
    sample = ("caf\u00e9 na\u00efve \u2014 \u2018quoted\u2019 \u201cdouble\u201d \u00bd \u00a0nbsp \u4e2d\u6587 "
              "\U0001f389 \u0410\u0431\u0432 \u0627\u0644\u0639\u0631\u0628\u064a\u0629 e\u0301 \ufb01 x\t\r\n  y")
    for text in (sample, sample * 3, "".join(chr(c) for c in range(32, 1200, 7))):
        ids = backend.encode(text, add_special_tokens=False).ids
        if any(i >= size for i in ids) or b"".join(table[i] for i in ids).decode("utf-8", "replace") \
                != backend.decode(ids, skip_special_tokens=False):
            return None
    return table


def rng_for(seed: int, text: str) -> random.Random:
    """The document-sampling RNG of one generation: depends on the seed and the text only."""
    digest = hashlib.blake2b(f"{seed}\x1f{text}".encode(), digest_size=8).digest()
    return random.Random(int.from_bytes(digest, "little"))


class _LazyRng:
    """`rng_for(seed, text)`, made at its first draw: most generations never sample (no span has more than
    max_docs occurrences), and seeding a Mersenne Twister costs more than the rest of their bookkeeping. The
    draws are the same, in the same order, as from the RNG made up front."""

    __slots__ = ("_seed", "_text", "_rng", "_spent")

    def __init__(self, seed: int, text: str):
        self._seed, self._text, self._rng, self._spent = seed, text, None, False

    def sample(self, population: Sequence[int], k: int) -> list[int]:
        if self._spent:
            raise RuntimeError("tracer bug: this generation's RNG was drawn by the compiled sampler already")
        if self._rng is None:
            self._rng = rng_for(self._seed, self._text)
        return self._rng.sample(population, k)

    def sorted_samples(self, counts: Sequence[int], k: int) -> list[list[int]]:
        """`[sorted(self.sample(range(n), k)) for n in counts]`: the same draws, made in one compiled call
        (`ingest.trace.rngkernel`, GIL released) when this is the RNG's first use; that consumes it."""
        if self._rng is None and not self._spent:
            digest = hashlib.blake2b(f"{self._seed}\x1f{self._text}".encode(), digest_size=8).digest()
            got = rngkernel.sorted_samples(int.from_bytes(digest, "little"), counts, k)  # rng_for's seed
            if got is not None:
                self._spent = True
                return got
        return [sorted(self.sample(range(n), k)) for n in counts]


class Tracer:
    def __init__(self, engine, tokenizer, logprobs: np.ndarray, floor: float, params: TraceParams,
                 trace_id: str):
        self.engine, self.tok, self.p, self.trace_id = engine, tokenizer, params, trace_id
        self.logprobs = np.asarray(logprobs, dtype=np.float64)
        self._lp = self.logprobs.tolist()  # Python floats: indexing a list is ~5x cheaper than a numpy array
        self.floor = float(floor)
        self._piece_cache: dict[int, str] = {}
        # a token's surface text is read after a reference token: decoding a lone `▁word` (Metaspace) strips
        # its space, so word starts would look like word continuations (text mode would trim every boundary)
        self._piece_ref = list(tokenizer.encode("a"))
        self._piece_ref_text = tokenizer.decode(self._piece_ref) if self._piece_ref else ""
        self._decode, table = _decoder_and_table(tokenizer)
        # the compiled window path: the byte table as one array + offsets (None: windows go through Python)
        self._table = None
        if table is not None and hasattr(engine, "windows_bytes"):
            if wk.available():
                self._table = (np.frombuffer(b"".join(table), dtype=np.uint8),
                               np.concatenate([[0], np.cumsum([len(t) for t in table])]).astype(np.int64),
                               np.frombuffer(plain_chars(), dtype=np.uint8))
        self._meta: dict[tuple[int, int], tuple[Any, ...]] = {}  # (shard, local doc) -> row fields, see _doc_fields
        self._meta_chars = 0  # characters of metadata JSON held in _meta (approximate under threads: a bound only)
        self.stats = LookupStats()
        # `IndexEngine` checks what it reads (found ranks, offsets, metadata) and names a damaged file;
        # stand-ins (tests, benchmarks) may lack either
        self._checked = hasattr(engine, "damaged")
        self._found = {"found": True} if "found" in inspect.signature(engine.docs_by_ranks).parameters else {}

    def _encode_array(self, text: str) -> Any:
        """The text's ids as the tokenizer's numpy array (`encode` is its `.tolist()`), when the tokenizer
        has `encode_batch`: the generation's index bytes come from the array without a list round trip."""
        enc = getattr(self.tok, "encode_batch", None)
        return None if enc is None else enc([text])[0]

    # -- lookups: the engine's byte-level searches when it has them (no engine threads) ------------------
    def _find(self, g: _Gen, b: int, e: int) -> dict[str, Any]:
        if g.bytes_ok:
            return self.engine.find_bytes(g.qb[b * g.w:e * g.w], g.hints.get(b))
        return self.engine.find(g.ids[b:e])

    def _count(self, g: _Gen, b: int, e: int) -> int:
        if g.bytes_ok:
            return self.engine.count_bytes(g.qb[b * g.w:e * g.w], g.hints.get(b))
        return self.engine.count(g.ids[b:e])

    def _occurs(self, g: _Gen, b: int, e: int) -> bool:
        if g.bytes_ok:
            return self.engine.occurs_bytes(g.qb[b * g.w:e * g.w])
        return self.engine.count(g.ids[b:e]) > 0

    def _decode_spans(self, g: _Gen, pieces: list[tuple[int, int]]) -> None:
        """The texts of many spans into g.span_text in one compiled call (`windowkernel.decode_pieces`: the
        byte-table join `_fast_decoder` does, GIL released); a piece that is not valid UTF-8 is left to
        `_text`, which decodes it with the tokenizer, as `_fast_decoder` does."""
        if self._table is None or g.plan is None:
            return
        todo = [be for be in pieces if be not in g.span_text]
        if not todo:
            return
        ok = np.zeros(len(todo), dtype=np.int64)
        tbytes, toff, _ = self._table
        text, off = wk.decode_pieces(g.plan.q, g.w, np.array([b for b, _ in todo], dtype=np.int64),
                                     np.array([e for _, e in todo], dtype=np.int64), tbytes, toff, ok)
        raw = text.tobytes()
        off_l = off.tolist()
        for i, good in enumerate(ok.tolist()):
            if good:
                g.span_text[todo[i]] = raw[off_l[i]:off_l[i + 1]].decode("utf-8")

    def _text(self, g: _Gen, b: int, e: int) -> str:
        t = g.span_text.get((b, e))
        if t is None:
            t = g.span_text[(b, e)] = self._decode(g.ids[b:e])
        return t

    # -- token text helpers ---------------------------------------------------------------------
    def _piece(self, t: int) -> str:
        """The text token `t` adds after other text, its leading space kept (`Ġword` and `▁word` alike)."""
        s = self._piece_cache.get(t)
        if s is None:
            whole = self.tok.decode(self._piece_ref + [t])
            ref = self._piece_ref_text
            s = whole[len(ref):] if self._piece_ref and whole.startswith(ref) else self.tok.decode([t])
            self._piece_cache[t] = s
        return s

    def _joins_word(self, left: int, right: int) -> bool:
        """True when the boundary between tokens `left` and `right` falls inside a word, or inside a character
        spelled as several byte tokens (byte fallback, byte-level BPE: their partial text decodes to U+FFFD).
        U+FFFD on both sides may be one character cut in two, and next to a letter may be a letter: both join;
        next to a space or punctuation it does not (`<0xA9>` then `▁très` is a word start)."""
        a, b = self._piece(left), self._piece(right)
        if not a or not b:
            return False
        x, y = a[-1], b[0]
        if x == "\ufffd" or y == "\ufffd":
            return (x == "\ufffd" or x.isalnum()) and (y == "\ufffd" or y.isalnum())
        return x.isalnum() and y.isalnum()

    def _score(self, ids: Sequence[int]) -> float:
        """Sum of unigram log-probs, left to right (the same additions, so the same float, as summing the
        numpy values: both are IEEE double adds in this order). Ids inside the table are looked up in one C
        call (`itemgetter`); `sum` adds the same floats in the same order either way."""
        lp, n = self._lp, len(self._lp)
        if len(ids) > 1 and max(ids) < n:
            return float(sum(itemgetter(*ids)(lp)))
        floor = self.floor
        return float(sum(lp[t] if t < n else floor for t in ids))

    def _spans_compiled(self, n: list[int], g: _Gen, arr: Any) -> list[tuple[int, int, float]] | None:
        """`(b, e, self._score(ids[b:e]))` for every span of `self._filter(ids, maximal_spans(n), g)` in token
        mode, the maximal spans, their texts and their scores each in one compiled call
        (`ingest.trace.spankernel`, `windowkernel.decode_pieces`); None when the kernels are off or their sums
        would not be `sum()`'s (Python >= 3.12)."""
        if not (spankernel.SAME_AS_SUM and spankernel.available()):
            return None
        plan = g.plan
        na = plan.n if plan is not None and plan.n is not None and len(plan.n) == len(n) else \
            np.asarray(n, dtype=np.int64)
        ids = np.asarray(g.ids if arr is None else arr, dtype=np.int64)
        # scores of every maximal span, those dropped below (blank text) included: one call, not two
        bs, es, sc = spankernel.spans_with_scores(na, self.p.min_span_len, ids, self.logprobs, self.floor)
        b_l, e_l = bs.tolist(), es.tolist()
        texts = g.span_text
        keep: list[int] = []
        if self._table is not None and plan is not None:  # as `_decode_spans`, from the arrays
            ok = np.zeros(len(b_l), dtype=np.int64)
            tbytes, toff, _ = self._table
            buf, off = wk.decode_pieces(plan.q, g.w, bs, es, tbytes, toff, ok)
            mv, off_l = memoryview(buf), off.tolist()
            for i, good in enumerate(ok.tolist()):
                be = (b_l[i], e_l[i])
                if good:
                    t = texts[be] = str(mv[off_l[i]:off_l[i + 1]], "utf-8")
                else:
                    t = self._text(g, *be)
                if t.strip():
                    keep.append(i)
        else:
            keep = [i for i, be in enumerate(zip(b_l, e_l)) if self._text(g, *be).strip()]
        scores = sc.tolist()
        return [(b_l[i], e_l[i], scores[i]) for i in keep]

    # -- span filters ---------------------------------------------------------------------------
    def _filter(self, ids: list[int], spans: list[tuple[int, int]], g: _Gen | None = None) -> list[tuple[int, int]]:
        p = self.p
        L = len(ids)
        long = []
        for b, e in spans:
            if p.mode == "text":
                while b < e and b > 0 and self._joins_word(ids[b - 1], ids[b]):
                    b += 1
                while e > b and e < L and self._joins_word(ids[e - 1], ids[e]):
                    e -= 1
                for i in range(b, e):
                    piece = self._piece(ids[i])
                    if piece.rstrip().endswith(_SENTENCE_END) and i + 1 < e:
                        e = i + 1
                        break
            if e - b >= p.min_span_len:
                long.append((b, e))
        if g is None:
            out = [(b, e) for b, e in long if self.tok.decode(ids[b:e]).strip()]
        else:
            self._decode_spans(g, long)
            out = [(b, e) for b, e in long if self._text(g, b, e).strip()]
        # keep maximal spans only (trimming in text mode can nest spans)
        out = sorted(set(out), key=lambda s: (s[0], -s[1]))
        maximal, max_end = [], -1
        for b, e in out:
            if e > max_end:
                maximal.append((b, e))
                max_end = e
        return maximal

    # -- documents ------------------------------------------------------------------------------
    def _pick_ranks(self, segs: list[tuple[int, int]], cnt: int, k: int,
                    rng: random.Random | None) -> list[tuple[int, int]]:
        """k occurrences: all when there are at most k, else evenly spaced (rng None) or sampled."""
        if cnt <= k:
            idx = list(range(cnt))
        elif rng is None:
            idx = [i * cnt // k for i in range(k)]
        else:
            idx = sorted(rng.sample(range(cnt), k))
        out, base, si = [], 0, 0
        bounds = []
        for s, (lo, hi) in enumerate(segs):
            bounds.append((base, base + hi - lo, s, lo))
            base += hi - lo
        for i in idx:
            while not (bounds[si][0] <= i < bounds[si][1]):
                si += 1
            b0, _, s, lo = bounds[si]
            out.append((s, lo + i - b0))
        return out

    def _documents(self, span: _Span, g: _Gen, span_id: str, rng: random.Random | None,
                   only_full_normalized: bool = False) -> list[dict[str, Any]]:
        p, ids = self.p, g.ids
        L = len(ids)
        res = self._find(g, span.start, span.end)
        span.count = res["cnt"]
        if res["cnt"] == 0:
            return []
        ranks = self._pick_ranks(res["segment_by_shard"], res["cnt"], p.max_docs, rng)
        ctx = (p.window_factor - 1) * L // 2
        n = span.end - span.start
        docs = self.engine.docs_by_ranks(ranks, needle_len=n, max_ctx_len=ctx, **self._found)
        rows, seen = [], set()
        for d in docs:
            # a sound index gives a window holding the span where the rank says; anything else is a damaged
            # suffix array (or token file) that the spot checks at open missed: stop rather than write rows
            # that name the wrong document
            if self._checked and d.tokens[d.needle_offset:d.needle_offset + n] != ids[span.start:span.end]:
                raise self.engine.damaged(d.shard, "table", f"rank {d.rank} does not point at the span it was "
                                                            "found for")
            if (d.shard, d.doc_ix) in seen:
                continue
            seen.add((d.shard, d.doc_ix))
            # [window text, tier, nv] of this exact window, computed once per generation
            key = (d.shard, d.doc_ix, d.window_start, len(d.tokens))
            cached = g.windows.get(key)
            if cached is None:
                cached = g.windows[key] = [self._decode(d.tokens), None, None]
            window = cached[0]
            if cached[1] is None:
                cached[1] = self._tier(g, window)
            tier = cached[1]
            if only_full_normalized and tier == "partial":
                continue
            if cached[2] is None:
                cached[2] = nv_recall_window(g.nv(p.nv_variant), window)
            nv: NvResult = cached[2]
            meta = d.metadata or {}
            rows.append({
                "span_document_id": make_key(span_id, d.shard, d.doc_ix), "span_id": span_id, "shard": d.shard,
                "doc_ix": d.doc_ix, "doc_id": None if meta.get("id") is None else str(meta.get("id")),
                "source": None if meta.get("source") is None else str(meta.get("source")),
                "domain": None if meta.get("domain") is None else str(meta.get("domain")),
                "metadata": _json(meta, d.path, d.linenum), "window_text": window, "match_tier": tier,
                "nv_recall": nv.recall, "nv_matched_words": nv.matched_words,
                "nv_generation_words": nv.generation_words, "nv_document_words": nv.document_words,
            })
        return rows

    def _documents_batch(self, jobs: list[tuple[_Span, random.Random | None, bool]], g: _Gen,
                         sid, extra: Sequence[tuple[int, int]] = ()) -> list[list[dict[str, Any]]]:
        """`_documents(span, g, sid(span), rng, only_full_normalized)` of every job, in order (the rng is drawn
        in the same order), with the compiled path when the engine, the tokenizer and numba allow it: one
        search call for every span, one call for every window (`IndexEngine.windows_bytes`), one call that
        decodes, tiers and scores every distinct window (`windowkernel.scan_windows`); Python builds the rows.
        A window the kernels cannot answer exactly (not valid UTF-8, non-ASCII) takes the Python steps."""
        fast = self._table is not None and g.plan is not None
        if fast:  # `extra`: pieces to count in the same search call (into g.extra_counts)
            rows = self._documents_compiled(jobs, g, sid, extra)
            if rows is not None:
                return rows
            # a check failed (a damaged index): the Python path raises the error, drawing a fresh rng
            fresh = rng_for(self.p.seed, g.text)
            jobs = [(s, None if r is None else fresh, only) for s, r, only in jobs]
        return [self._documents(s, g, sid(s), r, only) for s, r, only in jobs]

    def _documents_compiled(self, jobs, g: _Gen, sid, extra: Sequence[tuple[int, int]] = ()
                            ) -> list[list[dict[str, Any]]] | None:
        p, eng = self.p, self.engine
        L = len(g.ids)
        if not jobs:
            return []
        nj = len(jobs)
        cnts, lo, hi = eng.find_many_bytes(g.plan, [s.start for s, _, _ in jobs] + [b for b, _ in extra],
                                           [s.end for s, _, _ in jobs] + [e for _, e in extra])
        if extra:
            g.extra_counts = cnts[nj:]
            cnts, lo, hi = cnts[:nj], lo[:nj], hi[:nj]
        k = p.max_docs
        samples: list[int] = []
        soff = [0]
        draw = [c > k and r is not None for (_, r, _), c in zip(jobs, cnts)]
        users = [r for (_, r, _), d in zip(jobs, draw) if d]
        drawn = None  # the generation's one RNG: every draw in one call (`_LazyRng.sorted_samples`)
        if users and all(r is users[0] for r in users) and isinstance(users[0], _LazyRng):
            drawn = iter(users[0].sorted_samples([c for c, d in zip(cnts, draw) if d], k))
        for (s, r, _), c, d in zip(jobs, cnts, draw):
            s.count = c
            if d:  # drawn in job order, as `_pick_ranks` draws them
                samples += next(drawn) if drawn is not None else sorted(r.sample(range(c), k))
            soff.append(len(samples))
        shards, ranks, job = wk.pick_requests(lo, hi, np.array(cnts, dtype=np.int64), k,
                                              np.array(samples, dtype=np.int64), np.array(soff, dtype=np.int64),
                                              np.array([r is None for _, r, _ in jobs], dtype=np.bool_))
        qs = np.array([s.start for s, _, _ in jobs], dtype=np.int64)
        qe = np.array([s.end for s, _, _ in jobs], dtype=np.int64)
        wb = eng.windows_bytes(g.plan, shards, ranks, qs[job], qe[job], (p.window_factor - 1) * L // 2)
        if wb is None:
            return None
        w = g.w
        kept, win, first, want = wk.dedup_requests(job, wb.shard, wb.doc_ix, wb.window_start,
                                                   (wb.boff[1:] - wb.boff[:-1]) // w,
                                                   np.array([only for _, _, only in jobs], dtype=np.bool_))
        sh_l, doc_l, local_l, job_l = wb.shard.tolist(), wb.doc_ix.tolist(), wb.local.tolist(), job.tolist()
        win_l = win.tolist()
        # [text, tier, nv, t] of each distinct window; a text is None until a row needs it: the texts are
        # decoded straight from the kernel's buffer (`raw_all`), once, and not at all for windows that only
        # anchors found and that are partial (their rows are dropped): ~13 MB of window text per 200 traces
        # would otherwise be copied under the GIL, some of it three times
        wins: list[list[Any]] = []
        raw_all: Any = None
        off_l: list[int] = []
        if first.size:
            res = np.zeros((first.size, 7), dtype=np.int64)
            nvg = g.nv(p.nv_variant) if g.words else None
            tbytes, toff, plain = self._table
            text, off = wk.scan_windows(
                wb.buf, wb.boff[first], wb.boff[first + 1], w, tbytes, toff, g.gen_bytes, g.norm_bytes,
                g.squeezed_bytes, nvg.buf if nvg is not None else _EMPTY,
                nvg.param_array if nvg is not None else _PARAMS0, want, res, plain)
            res_l, off_l, boff = res.tolist(), off.tolist(), wb.boff
            raw_all = memoryview(text)
            nv_done_code, tiers = wk.NV_DONE, _TIERS
            for t, i in enumerate(first.tolist()):
                valid, _, tier, nv_done, matched, ng, nd = res_l[t]
                nv = (matched / ng, matched, ng, nd) if nv_done == nv_done_code else None
                if valid and tier:
                    wins.append([None, tiers[tier], nv, t])
                    continue
                if valid:  # a non-ASCII window: the normalized tier from its bytes when NFKC-normal
                    raw = raw_all[off_l[t]:off_l[t + 1]]
                    window = str(raw, "utf-8")
                    wins.append([window, tiers[_TIER_CODES[self._tier(g, window, raw.tobytes())]], nv, t])
                else:
                    window = self._decode(np.frombuffer(wb.buf[boff[i]:boff[i + 1]].tobytes(),
                                                        dtype=f"<u{w}").tolist())
                    wins.append([window, None, nv, t])
        # the rows' keys, make_key(span_id, shard, doc_ix), in one compiled call for every kept window
        kidx = kept.nonzero()[0]  # np.flatnonzero, without its Python wrapper
        heads = [f"str:{sid(s)}\x1f".encode() for s, _, _ in jobs]  # keykernel.prefix_bytes of a str span id
        dkeys = keykernel.pair_keys(heads, job[kidx], wb.shard[kidx], wb.doc_ix[kidx])
        kept_by_job: list[list[tuple[int, str]]] = [[] for _ in jobs]
        for i, key in zip(kidx.tolist(), dkeys):
            kept_by_job[job_l[i]].append((i, key))
        meta = self._meta
        out = []
        for j, (s, _, only) in enumerate(jobs):
            span_id = sid(s)
            rows = []
            for i, key in kept_by_job[j]:
                cached = wins[win_l[i]]
                tier = cached[1]
                if tier is None:
                    tier = cached[1] = self._tier(g, cached[0])
                if only and tier == "partial":
                    continue
                window = cached[0]
                if window is None:
                    t = cached[3]
                    window = cached[0] = str(raw_all[off_l[t]:off_l[t + 1]], "utf-8")
                if cached[2] is None:  # (recall, matched, generation words, document words): NvResult's fields
                    r = nv_recall_window(g.nv(p.nv_variant), window)
                    cached[2] = (r.recall, r.matched_words, r.generation_words, r.document_words)
                recall, matched, ng, nd = cached[2]
                sh = sh_l[i]
                f = meta.get((sh, local_l[i]))
                doc_id, source, domain, meta_json = self._doc_fields(sh, local_l[i]) if f is None else f
                rows.append({
                    "span_document_id": key, "span_id": span_id, "shard": sh,
                    "doc_ix": doc_l[i], "doc_id": doc_id, "source": source, "domain": domain, "metadata": meta_json,
                    "window_text": window, "match_tier": tier, "nv_recall": recall, "nv_matched_words": matched,
                    "nv_generation_words": ng, "nv_document_words": nd,
                })
            out.append(rows)
        return out

    @staticmethod
    def _tier(g: _Gen, window: str, raw: bytes | None = None) -> str:
        if g.text and g.text in window:
            return "exact_full_raw"
        if g.norm_doc and g.maybe_in(window) and g.normalized_in(window, raw):
            return "exact_full_normalized"
        return "partial"

    def _doc_fields(self, shard: int, local: int) -> tuple[Any, ...]:
        """(doc_id, source, domain, metadata JSON) of a document's rows, read and formatted once per tracer
        (the index never changes; bounded: cleared past 20,000 documents or 32 Mi characters of metadata JSON,
        as a corpus record's other fields can be large)."""
        key = (shard, local)
        f = self._meta.get(key)
        if f is None:
            path, linenum, meta = self.engine.doc_metadata(shard, local)
            meta = meta or {}
            f = (None if meta.get("id") is None else str(meta.get("id")),
                 None if meta.get("source") is None else str(meta.get("source")),
                 None if meta.get("domain") is None else str(meta.get("domain")), _json(meta, path, linenum))
            if len(self._meta) > 20_000 or self._meta_chars > _META_CACHE_CHARS:
                self._meta.clear()
                self._meta_chars = 0
            self._meta[key] = f
            self._meta_chars += len(f[3])
        return f

    # -- duplication ----------------------------------------------------------------------------
    def _trimmed(self, span: _Span, g: _Gen) -> tuple[int, int, int, int]:
        """(start, end, trim_start, trim_end): the span without mid-word ends, at most max_trim tokens each."""
        p, ids = self.p, g.ids
        b, e = span.start, span.end
        trim_b = trim_e = 0
        while trim_b < p.max_trim and b > 0 and b < e and self._joins_word(ids[b - 1], ids[b]):
            b += 1
            trim_b += 1
        while trim_e < p.max_trim and e < len(ids) and e > b and self._joins_word(ids[e - 1], ids[e]):
            e -= 1
            trim_e += 1
        return b, e, trim_b, trim_e

    def _dup_counts(self, span: _Span, g: _Gen, span_id: str) -> dict[str, Any]:
        p = self.p
        pre = g.dup.get(id(span))
        if pre is not None:
            trim_b, trim_e, first50, whole = pre
            return {"span_id": span_id, "first50_count": first50, "whole_count": whole, "trim_start": trim_b,
                    "trim_end": trim_e}
        b, e, trim_b, trim_e = self._trimmed(span, g)
        q = e > b
        return {"span_id": span_id, "first50_count": self._count(g, b, min(e, b + p.dup_prefix_len)) if q else None,
                "whole_count": self._count(g, b, e) if q else None, "trim_start": trim_b, "trim_end": trim_e}

    def _count_plan(self, spans: list[_Span], g: _Gen, jobs) -> tuple[list[_Span], list[tuple[Any, ...]],
                                                                     list[tuple[int, int]]]:
        """What `_count_spans` searches, known before the documents step: (the spans that step does not
        count, step 9's trims of every long span, the pieces to count for both, in that order), so the
        documents step's one search call counts them too (compiled path)."""
        in_jobs = {id(s) for s, _, _ in jobs}
        todo = [s for s in spans if id(s) not in in_jobs]
        dups, pieces = self._dup_pieces(spans, g)
        return todo, dups, [(s.start, s.end) for s in todo] + pieces

    def _dup_pieces(self, spans: list[_Span], g: _Gen) -> tuple[list[tuple], list[tuple[int, int]]]:
        """Step 9's trims of every long span ((span, b, e, tb, te) each) and the pieces whose counts it needs:
        the trimmed span's first dup_prefix_len tokens and the whole trimmed span, when the trim left any."""
        p = self.p
        dups, pieces = [], []
        for s in spans:
            if s.end - s.start >= p.dup_min_len:
                b, e, tb, te = self._trimmed(s, g)
                dups.append((s, b, e, tb, te))
                if e > b:
                    pieces += [(b, min(e, b + p.dup_prefix_len)), (b, e)]
        return dups, pieces

    def _count_spans(self, spans: list[_Span], g: _Gen, planned: tuple[Any, ...] | None = None) -> None:
        """The count of every span that has none yet and, on the compiled path, the duplication counts of
        step 9 (into g.dup), all in one search call (or counted with the documents step: `planned`, from
        `_count_plan`, and g.extra_counts); else `_count` span by span."""
        if g.plan is None:
            for s in spans:
                if not s.count:
                    s.count = self._count(g, s.start, s.end)
            return
        if planned is not None and g.extra_counts is not None:
            # a span of the documents step that has no occurrence keeps its 0 (searching it again gives 0)
            todo, dups, _ = planned
            cnt = iter(g.extra_counts)
            for s in todo:
                s.count = next(cnt)
            for s, b, e, tb, te in dups:
                g.dup[id(s)] = (tb, te, next(cnt), next(cnt)) if e > b else (tb, te, None, None)
            return
        dups, pieces = self._dup_pieces(spans, g)
        qs: list[tuple[int, int]] = [(s.start, s.end) for s in spans if not s.count] + pieces
        if not qs:
            return
        cnt = iter(self.engine.find_many_bytes(g.plan, [b for b, _ in qs], [e for _, e in qs])[0])
        for s in spans:
            if not s.count:
                s.count = next(cnt)
        for s, b, e, tb, te in dups:
            g.dup[id(s)] = (tb, te, next(cnt), next(cnt)) if e > b else (tb, te, None, None)

    # -- the whole trace ------------------------------------------------------------------------
    def trace(self, generation_id: str, text: str) -> TraceOutput:
        out = TraceOutput()
        arr = self._encode_array(text)
        ids = self.tok.encode(text) if arr is None else arr.tolist()
        L = len(ids)
        out.generation = {
            "traced_generation_id": make_key(self.trace_id, generation_id), "trace_id": self.trace_id,
            "generation_id": generation_id, "text_hash": text_hash(text), "n_index_tokens": L,
        }
        if L == 0:
            return out
        p = self.p
        rng = _LazyRng(p.seed, text)
        g = _Gen(self.engine, text, ids, arr)
        span_ids: dict[tuple[int, int], str] = {}
        head = keykernel.prefix_bytes(self.trace_id, generation_id)

        def sid(s: _Span) -> str:  # a span's key: all of them are hashed in one call before step 6 (below)
            k = (s.start, s.end)
            v = span_ids.get(k)
            if v is None:
                v = span_ids[k] = keykernel.pair_keys([head], [0], [s.start], [s.end])[0]
            return v

        spans: list[_Span] = []
        full = None
        jobs: list[tuple[_Span, _LazyRng | None, bool]] = []  # (span, rng, only_full_normalized)
        # step 2; the compiled documents path searches from the plan's hints, the Python path from g.hints
        hints = g.hints if g.bytes_ok and (self._table is None or g.plan is None) else None
        n = longest_matches(self.engine, ids, self.stats, hints, plan=g.plan)
        # step 1: full match. The whole generation occurs exactly when the longest match at its first token
        # is all of it (n(0) = L), which step 2 has just found: no search of its own on the compiled path
        if (n[0] == L) if g.plan is not None else self._occurs(g, 0, L):
            full = _Span(0, L, self._score(ids), kept=True, is_full=True)
            jobs.append((full, None, False))
            spans.append(full)
        found_spans = self._spans_compiled(n, g, arr) if p.mode != "text" else None
        if found_spans is None:
            found_spans = [(b, e, self._score(ids[b:e])) for b, e in self._filter(ids, maximal_spans(n), g)]
        for b, e, score in found_spans:  # steps 3-4
            if full is not None and (b, e) == (0, L):
                continue
            spans.append(_Span(b, e, score))
        partial = [s for s in spans if not s.is_full]

        k = p.n_rare(L)  # step 5: the K rarest spans
        rare = sorted(partial, key=_BY_SCORE)[:k]
        for s in rare:
            s.kept = True

        # step 7: merge overlapping kept spans whose union occurs: ids[b:e] occurs exactly when the longest
        # match at b reaches e (n(b) >= e - b), which step 2 found (compiled path: no search of its own)
        def occurs(b: int, e: int) -> bool:
            return n[b] >= e - b if g.plan is not None else self._occurs(g, b, e)

        kept = sorted(rare, key=_BY_START)
        merged: list[_Span] = []
        for s in kept:
            if (merged and s.start < merged[-1].end and (merged[-1].start, s.end) != (0, L)
                    and occurs(merged[-1].start, s.end)):
                prev = merged[-1]
                union = _Span(prev.start, s.end, self._score(ids[prev.start:s.end]), kept=True, merged=True)
                prev.kept = s.kept = False
                merged[-1] = union
                spans.append(union)
            else:
                merged.append(s)
        jobs += [(s, rng, False) for s in merged]  # step 6: documents of the kept spans
        anchors: list[_Span] = []
        if full is None:  # step 8: anchors for documents holding the normalized generation
            anchors = sorted(partial, key=lambda s: (s.start - s.end, s.score, s.start))[:p.n_anchors]  # longest first
            jobs += [(a, rng, True) for a in anchors]
        # every span exists now: their keys in one compiled call (GIL released), not one hash per span
        todo = list(dict.fromkeys([(s.start, s.end) for s in spans]))
        span_ids.update(zip(todo, keykernel.pair_keys([head], [0] * len(todo), [b for b, _ in todo],
                                                      [e for _, e in todo])))
        planned = self._count_plan(spans, g, jobs) if g.plan is not None and self._table is not None else None
        found = self._documents_batch(jobs, g, sid, planned[2] if planned is not None else ())
        for rows in found[:len(jobs) - len(anchors)]:
            out.documents += rows
        if anchors:
            have = {(d["span_id"], d["shard"], d["doc_ix"]) for d in out.documents}
            for rows in found[len(jobs) - len(anchors):]:
                for d in rows:
                    if (d["span_id"], d["shard"], d["doc_ix"]) not in have:
                        out.documents.append(d)

        self._count_spans(spans, g, planned)
        trace_id, dup_min, texts = self.trace_id, p.dup_min_len, g.span_text
        for s in spans:
            b, e = s.start, s.end
            span_id = span_ids[(b, e)]
            text = texts.get((b, e))
            out.spans.append({
                "span_id": span_id, "trace_id": trace_id, "generation_id": generation_id,
                "start_tok": b, "end_tok": e, "length": e - b, "count": s.count,
                "unigram_logprob": s.score, "kept": s.kept, "merged": s.merged, "is_full": s.is_full,
                "text": self._text(g, b, e) if text is None else text,
            })
            if e - b >= dup_min:  # step 9
                out.counts.append(self._dup_counts(s, g, span_id))
        return out


def _json(meta: dict, path: str | None, linenum: int | None) -> str:
    import json

    return json.dumps({**meta, "_path": path, "_linenum": linenum}, sort_keys=True, default=str)
