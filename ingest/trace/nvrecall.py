"""Near-verbatim recall of a generation against a retrieved document window (docs/propme-method.md, section 3).

Matching blocks come from difflib's algorithm with `autojunk=False`: with autojunk on, any word occurring in
more than 1% of a long document is treated as junk, so verbatim code or boilerplate (full of repeated tokens)
would score near 0. We run cydifflib, a compiled port of difflib that returns the same blocks 3-6x faster
(nv-recall was 40-50% of the tracer's time); tests compare it with the standard library's difflib.
Blocks are merged across small gaps in two passes (first tight, then wider) and short merged blocks are
dropped; recall is the share of the generation's words inside surviving blocks.
"""

from __future__ import annotations

from dataclasses import dataclass

from cydifflib import SequenceMatcher

from ingest.trace.normalize import normalize_words, splits_as_ascii, words_text


@dataclass(frozen=True)
class NvParams:
    gap1: int
    align1: int
    min1: int
    gap2: int
    align2: int
    min2: int


@dataclass(frozen=True)
class NvResult:
    recall: float
    matched_words: int
    generation_words: int
    document_words: int


def _clamp(x: int, lo: int, hi: int) -> int:
    return max(lo, min(hi, x))


def adaptive_params(n: int) -> NvParams:
    """The length-adaptive parameters (Python's round: half to even)."""
    return NvParams(
        gap1=_clamp(round(0.02 * n), 1, 6), align1=_clamp(round(0.01 * n), 1, 3), min1=_clamp(round(0.15 * n), 2, 20),
        gap2=_clamp(round(0.08 * n), 2, 12), align2=_clamp(round(0.03 * n), 1, 5), min2=_clamp(round(0.35 * n), 4, 100),
    )


FIXED_PARAMS = NvParams(gap1=2, align1=1, min1=20, gap2=10, align2=3, min2=100)  # Ahmed et al. 2026

# a block: (start in G, end in G, start in D, end in D, matched words)
_Block = tuple[int, int, int, int, int]


def _merge(blocks: list[_Block], gap: int, align: int, min_len: int) -> list[_Block]:
    merged: list[_Block] = []
    for blk in blocks:
        if merged:
            g0, g1, d0, d1, m = merged[-1]
            gap_g, gap_d = blk[0] - g1, blk[2] - d1
            if max(gap_g, gap_d) <= gap and abs(gap_g - gap_d) <= align:
                merged[-1] = (g0, blk[1], d0, blk[3], m + blk[4])
                continue
        merged.append(blk)
    return [b for b in merged if b[4] >= min_len]


def nv_recall_words(gen: list[str], doc: list[str], params: NvParams | None = None) -> NvResult:
    n = len(gen)
    if n == 0:
        return NvResult(0.0, 0, 0, len(doc))
    p = params or adaptive_params(n)
    sm = SequenceMatcher(None, gen, doc, autojunk=False)
    blocks = [(a, a + size, b, b + size, size) for a, b, size in sm.get_matching_blocks() if size]
    blocks = _merge(blocks, p.gap1, p.align1, p.min1)
    blocks = _merge(blocks, p.gap2, p.align2, p.min2)
    matched = sum(b[4] for b in blocks)
    return NvResult(matched / n, matched, n, len(doc))


def nv_recall(generation: str, document: str, params: NvParams | None = None) -> NvResult:
    """Near-verbatim recall of `generation` in `document` (both raw text)."""
    return nv_recall_words(normalize_words(generation), normalize_words(document), params)


class PreparedGeneration:
    """A generation's words in the form the compiled nv-recall reads (joined by spaces, UTF-8, a private
    writable copy), with its parameters: made once per generation, used for every window."""

    def __init__(self, words: list[str], params: NvParams | None = None):
        import numpy as np

        self.words = words
        self.params = params or adaptive_params(len(words)) if words else params
        p = self.params
        self.param_array = np.array([p.gap1, p.align1, p.min1, p.gap2, p.align2, p.min2] if p else [0] * 6,
                                    dtype=np.int64)
        self.buf = np.frombuffer(bytearray(" ".join(words).encode("utf-8")), dtype=np.uint8)


def nv_recall_window(gen: PreparedGeneration, window: str) -> NvResult:
    """`nv_recall_words(gen.words, normalize_words(window), params)`, computed by the compiled kernel
    (`ingest.trace.nvkernel`, GIL released) when numba loads; an ASCII window is split and lowercased there
    without building its words in Python. Same result, number for number (tests/python/test_trace_nogil.py)."""
    from ingest.trace import nvkernel

    if gen.words and nvkernel.available():
        import numpy as np

        if window.isascii():
            buf, lower = np.frombuffer(bytearray(window.encode("ascii")), dtype=np.uint8), True
        else:  # normalized and lowercased here; split there unless other whitespace than ASCII's remains
            t = words_text(window)
            if not splits_as_ascii(t):
                t = " ".join(t.split())
            buf, lower = np.frombuffer(bytearray(t.encode("utf-8")), dtype=np.uint8), False
        status, matched, n, nd = nvkernel.nv_counts(gen.buf, buf, lower, gen.param_array)
        if status == 0:
            return NvResult(matched / n, int(matched), int(n), int(nd))
    return nv_recall_words(gen.words, normalize_words(window), gen.params)
