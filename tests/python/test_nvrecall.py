"""Near-verbatim recall against hand-computed cases and the parameter table of docs/propme-method.md."""

from __future__ import annotations

import pytest

from ingest.trace.normalize import normalize_document, normalize_words
from ingest.trace.nvrecall import FIXED_PARAMS, NvParams, adaptive_params, nv_recall, nv_recall_words

# (n, gap1, align1, min1, gap2, align2, min2), computed by hand from docs/propme-method.md section 3
TABLE = [
    (1, 1, 1, 2, 2, 1, 4),
    (10, 1, 1, 2, 2, 1, 4),
    (40, 1, 1, 6, 3, 1, 14),
    (50, 1, 1, 8, 4, 2, 18),      # round(7.5) = 8 and round(1.5) = 2 (half to even)
    (100, 2, 1, 15, 8, 3, 35),
    (250, 5, 2, 20, 12, 5, 88),   # round(2.5) = 2, round(87.5) = 88
    (1000, 6, 3, 20, 12, 5, 100),
]


@pytest.mark.parametrize("n,gap1,align1,min1,gap2,align2,min2", TABLE)
def test_adaptive_parameter_table(n, gap1, align1, min1, gap2, align2, min2) -> None:
    assert adaptive_params(n) == NvParams(gap1, align1, min1, gap2, align2, min2)


def _words(k: int, prefix: str = "w") -> list[str]:
    return [f"{prefix}{i}" for i in range(k)]


def test_one_substituted_word_is_bridged() -> None:
    g = _words(40)
    d = ["intro"] * 5 + g[:20] + ["CHANGED"] + g[21:] + ["outro"]
    # blocks of 20 and 19 words, gap (1, 1) <= gap1 = 1 -> merged, 39 matched of 40
    r = nv_recall_words(g, d)
    assert (r.matched_words, r.generation_words, r.recall) == (39, 40, 39 / 40)


def test_insertion_is_not_bridged_but_both_halves_count() -> None:
    g = _words(40)
    d = g[:20] + ["x", "y", "z"] + g[20:]
    # gap (0, 3): too wide for pass 1, misaligned for pass 2 (|0-3| > align2 = 1); both 20-word blocks >= 14
    assert nv_recall_words(g, d).recall == 1.0


def test_scattered_short_matches_score_zero() -> None:
    g = _words(40)
    d = []
    for i in range(0, 40, 4):
        d += g[i:i + 3] + [f"noise{i}"]
    # blocks of 3 words with gap (1, 1): merged in pass 1 into long blocks ... unless gaps differ
    # here every gap in G is 1 (skip g[i+3]) and in D is 1 (noise): they merge, so recall counts
    r = nv_recall_words(g, d)
    assert r.matched_words == 30 and r.recall == 0.75
    # with two noise words between pieces, gap (1, 2) is misaligned for pass 1? |1-2| = 1 <= align1: merges too;
    # with three, max gap 3 > gap1 and pieces of 3 < min1 = 6 are dropped -> 0
    d3 = []
    for i in range(0, 40, 4):
        d3 += g[i:i + 3] + ["n1", "n2", "n3"]
    assert nv_recall_words(g, d3).recall == 0.0


VERBATIM_CODE = """def __init__(self, x):
    self.x = x
    self.y = x
    self.z = x
    return None

def __repr__(self):
    return f"{self.x} {self.y} {self.z}"
""" * 3

LICENSE = ("Permission is hereby granted, free of charge, to any person obtaining a copy of this software "
           "and associated documentation files (the \"Software\"), to deal in the Software without "
           "restriction, including without limitation the rights to use, copy, modify, merge, publish, "
           "distribute, sublicense, and/or sell copies of the Software.")


def test_verbatim_code_and_boilerplate_score_one() -> None:
    filler = " ".join(["self = x return None the"] * 400)  # makes "self", "x" etc. very frequent in D
    for g in (VERBATIM_CODE, LICENSE):
        doc = filler + "\n" + g + "\n" + filler
        assert nv_recall(g, doc).recall == 1.0


def test_autojunk_would_have_failed_verbatim_code() -> None:
    """Documents why autojunk must be off: with it, frequent words are junk and blocks shatter."""
    from difflib import SequenceMatcher

    import random

    rng = random.Random(0)
    tokens = ["self", "=", "x", "return", "if", "None:", "def", "(", ")", "in", "for", "i", "+", "1", "not", "and"]
    d = [rng.choice(tokens) for _ in range(3000)]  # a long source file written in a small vocabulary
    g = d[1000:1080]  # the model reproduced 80 words of it verbatim
    junk = SequenceMatcher(None, g, d, autojunk=True)
    assert max(b.size for b in junk.get_matching_blocks()) == 0  # every word is "popular": no match at all
    assert nv_recall_words(g, d).recall == 1.0


def test_normalization_makes_typography_irrelevant() -> None:
    g = "\u201cIt\u2019s fine\u201d \u2014 she said\u2026 TWICE"
    d = '"it\'s FINE" - she said... twice'
    assert normalize_words(g) == normalize_words(d)
    assert normalize_document("a \t b  \r\n  c\n\n\n\nd  ") == "a b\nc\n\nd"


def test_empty_generation_and_fixed_variant() -> None:
    assert nv_recall("", "anything").recall == 0.0
    g = _words(150)
    d = g[:120] + ["x"] + g[121:]
    # fixed (2,1,20) then (10,3,100): one 149-word merged block >= 100
    assert nv_recall_words(g, d, FIXED_PARAMS).matched_words == 149
    assert nv_recall_words(g[:90], g[:90], FIXED_PARAMS).recall == 0.0  # 90 < 100: dropped in the fixed variant


def test_compiled_matcher_equals_stdlib_difflib() -> None:
    """nv-recall runs cydifflib for speed; its matching blocks must be the standard library's, block for block
    (same tie-breaking between equally long matches), on text with heavy repetition where ties abound."""
    import difflib
    import random

    import cydifflib

    rng = random.Random(7)
    for _ in range(2000):
        vocab = [f"w{i}" for i in range(rng.randint(1, 30))]
        a = [rng.choice(vocab) for _ in range(rng.randint(0, 90))]
        b = [rng.choice(vocab) for _ in range(rng.randint(0, 150))]
        if a and rng.random() < 0.5:  # plant a near-copy of a piece of `a`
            s = rng.randrange(len(a))
            piece = a[s:s + rng.randint(1, 70)]
            if piece and rng.random() < 0.5:
                piece[rng.randrange(len(piece))] = "edit"
            k = rng.randint(0, len(b))
            b = b[:k] + piece + b[k:]
        want = difflib.SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks()
        got = cydifflib.SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks()
        assert [tuple(x) for x in got] == [tuple(x) for x in want]


def test_ascii_fast_path_of_word_normalization_is_the_full_pipeline():
    """normalize_words skips NFKC, quote, dash and ellipsis mapping for ASCII text: those map non-ASCII only."""
    import random
    import string
    import unicodedata

    from ingest.trace import normalize as N

    rng = random.Random(3)
    alphabet = string.printable + "\u2019\u201c\u2014\u2026\u00e9\uff21"
    for _ in range(3000):
        text = "".join(rng.choice(alphabet if rng.random() < 0.3 else string.printable) for _ in range(rng.randint(0, 60)))
        full = N._DASHES.sub("-", unicodedata.normalize("NFKC", text).translate(N._QUOTES)).replace("\u2026", "...")
        assert normalize_words(text) == full.lower().split()
