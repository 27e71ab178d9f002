"""The tracer's compiled, GIL-free pieces give exactly what the Python ones give.

- nv-recall (`ingest.trace.nvkernel`, numba): matching blocks against the standard library's difflib
  (`autojunk=False`) on repetition-heavy word lists, and whole results against `nv_recall_words` on windows
  with upper case, every ASCII whitespace character str.split knows, non-ASCII words and typography.
- The kernels are compiled with `nogil=True`: a trace's nv-recall runs in parallel on threads.
"""

from __future__ import annotations

import difflib
import random
import string

import numpy as np
import pytest

from ingest.trace import nvkernel
from ingest.trace.normalize import normalize_words
from ingest.trace.nvrecall import FIXED_PARAMS, PreparedGeneration, nv_recall_window, nv_recall_words

pytestmark = pytest.mark.skipif(not nvkernel.available(), reason=f"numba unavailable: {nvkernel._LOAD_ERROR}")


def _pair(rng: random.Random) -> tuple[list[str], list[str]]:
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
    return a, b


def test_matching_blocks_equal_stdlib_difflib() -> None:
    rng = random.Random(11)
    for _ in range(2000):
        a, b = _pair(rng)
        ids: dict[str, int] = {}
        A = np.array([ids.setdefault(w, len(ids)) for w in a], dtype=np.int64)
        B = np.array([ids.setdefault(w, len(ids)) for w in b], dtype=np.int64)
        got = [tuple(int(v) for v in r) for r in nvkernel.matching_blocks(A, B, len(ids))]
        want = [tuple(x) for x in difflib.SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks()]
        assert got + [(len(a), len(b), 0)] == want


def _noisy(rng: random.Random, words: list[str]) -> str:
    seps = [" ", "  ", "\t", "\n", "\r\n", "\x0b", "\x0c", "\x1c", "\x1f", " \u00a0", "\u2003", "\x85", "\u2028",
            "\u1680", "\u3000"]
    out = []
    for w in words:
        r = rng.random()
        if r < 0.2:
            w = w.upper()
        elif r < 0.25:
            w = w + rng.choice(["\u2019s", "\u2014x", "\u00e9", "\uff21", "\u2026", "\u00c4", "\u0130", "\u2032",
                                "\U0001f6a8", "\u2500"])
        out.append(w)
        out.append(rng.choice(seps) if rng.random() < 0.3 else " ")
    return "".join(out)


@pytest.mark.parametrize("variant", ["adaptive", "fixed"])
def test_window_nv_recall_equals_the_python_path(variant) -> None:
    rng = random.Random(5 if variant == "adaptive" else 6)
    for i in range(1500):
        a, b = _pair(rng)
        if rng.random() < 0.3:
            a = a * rng.randint(1, 4)  # long enough for the fixed variant's thresholds
            b = b[:5] + a + b[5:]
        gen_text = _noisy(rng, a) if rng.random() < 0.5 else " ".join(a)
        window = _noisy(rng, b) if rng.random() < 0.7 else " ".join(b)
        if i % 7 == 0:
            window = "".join(rng.choice(string.printable) for _ in range(rng.randint(0, 300)))
        params = FIXED_PARAMS if variant == "fixed" else None
        words = normalize_words(gen_text)
        want = nv_recall_words(words, normalize_words(window), params)
        assert nv_recall_window(PreparedGeneration(words, params), window) == want


def test_kernels_release_the_gil() -> None:
    for f in (nvkernel.nv_counts, nvkernel.matching_blocks):
        assert f.targetoptions.get("nogil") is True


def test_ascii_window_normalization_equals_normalize_document() -> None:
    """The compiled whitespace rewrite of the exact_full_normalized tier against `normalize_document`, on
    ASCII text dense in every whitespace character (CR, CRLF, tabs, runs, \\v \\f \\x1c-\\x1f at the ends)."""
    from ingest.trace import tierkernel
    from ingest.trace.normalize import normalize_document

    assert tierkernel.available(), tierkernel._LOAD_ERROR
    rng = random.Random(1)
    dense = " \t\r\n\x0b\x0c\x1c\x1fab.,"
    for _ in range(20000):
        s = "".join(rng.choice(dense if rng.random() < 0.7 else string.printable) for _ in range(rng.randint(0, 40)))
        got = tierkernel.normalize_ascii(np.frombuffer(s.encode(), dtype=np.uint8)).tobytes().decode()
        assert got == normalize_document(s), repr(s)
        norm = normalize_document(s[: len(s) // 2]).encode()
        assert tierkernel.normalized_holds(norm, s) == (norm.decode() in normalize_document(s))
    # non-ASCII: answered when NFKC leaves the window as it is, else the Python path decides
    assert tierkernel.normalized_holds(b"x", "caf\u00e9 x") is True
    assert tierkernel.normalized_holds(b"x", "\ufb01 x") is None
    assert tierkernel.normalize_ascii.targetoptions.get("nogil") is True
