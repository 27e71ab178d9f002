"""Text normalizations of the tracer: one for "same document after cleanup", one for word comparison.

Kept in one place because the full-match tier, the anchor search and nv-recall must agree on them.
"""

from __future__ import annotations

import functools
import re
import unicodedata

_SPACES = re.compile(r"[ \t]+")
_AROUND_NL = re.compile(r" *\n *")
_MANY_NL = re.compile(r"\n{3,}")

_QUOTES = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'",
                         "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u2033": '"',
                         "\u00ab": '"', "\u00bb": '"'})
_DASHES = re.compile("[\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d]+")
# the characters _QUOTES maps: translate() looks every character up in a dict (~0.4 ms for a 1,500-token
# window), so it runs only when one is present
_QUOTE_CHARS = re.compile("[" + "".join(chr(c) for c in _QUOTES) + "]")
# every character the typography steps rewrite: one scan decides whether any of them has work to do
_TYPOGRAPHY = re.compile("[" + "".join(chr(c) for c in _QUOTES) + _DASHES.pattern[1:-2] + "\u2026]")
# whitespace str.split() knows beyond ASCII's (str.isspace): text without any splits the same on ASCII bytes
_NON_ASCII_SPACE = re.compile("[\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]")


def normalize_document(text: str) -> str:
    """NFKC, CRLF -> LF, runs of spaces/tabs -> one space, no spaces around newlines,
    three or more newlines -> two, stripped. Used for the `exact_full_normalized` tier."""
    t = unicodedata.normalize("NFKC", text).replace("\r\n", "\n").replace("\r", "\n")
    t = _SPACES.sub(" ", t)
    t = _AROUND_NL.sub("\n", t)
    t = _MANY_NL.sub("\n\n", t)
    return t.strip()


def normalize_words(text: str) -> list[str]:
    """Words for near-verbatim recall: NFKC, straight quotes, one dash, '...' for an ellipsis,
    lowercase, split on whitespace."""
    return words_text(text).split()


def words_text(text: str) -> str:
    """`normalize_words(text)` before the split: `words_text(t).split() == normalize_words(t)`."""
    if text.isascii():  # every step before lower() maps only non-ASCII characters: skip them (most code)
        return text.lower()
    t = unicodedata.normalize("NFKC", text)  # NFKC already turns U+2026 into "..."
    if _TYPOGRAPHY.search(t):  # else the three rewrites below change nothing
        if _QUOTE_CHARS.search(t):
            t = t.translate(_QUOTES)
        t = _DASHES.sub("-", t)
        t = t.replace("\u2026", "...")
    return t.lower()


def splits_as_ascii(text: str) -> bool:
    """str.split() of `text` splits exactly where a split on ASCII whitespace would (no other whitespace)."""
    return text.isascii() or not _NON_ASCII_SPACE.search(text)


def collapse_whitespace(text: str) -> str:
    """All whitespace runs -> one space, stripped (targeted extraction and loop checks)."""
    return " ".join(text.split())


# `plain_chars` classes: 1 plain; the typography rewrites of `words_text`, for characters plain otherwise
PLAIN, SINGLE_QUOTE, DOUBLE_QUOTE, DASH = 1, 2, 3, 4
# code points `plain_chars` covers: the BMP and the Supplementary Multilingual Plane (emoji, symbols, scripts)
PLAIN_RANGE = 0x20000


@functools.lru_cache(maxsize=1)
def plain_chars() -> bytes:
    """One byte per code point below PLAIN_RANGE: PLAIN for a non-ASCII character that every normalization
    above leaves as it is wherever it stands, SINGLE_QUOTE / DOUBLE_QUOTE / DASH for one that only the
    typography rewrites of `words_text` change (to ' / " / one - per run), 0 otherwise (ASCII included: it
    is handled apart). In a text whose non-ASCII characters are all classed, NFKC changes nothing,
    `lower()` changes only ASCII letters, `str.split()` splits on ASCII whitespace only, and the typography
    rewrites are the classes' ASCII replacements: both normalizations are ASCII steps on the UTF-8 bytes
    (the compiled window scan, `ingest.trace.windowkernel`). Classed: NFKC maps the character to itself,
    it is its own lowercase, not whitespace, not a combining mark (no reordering), not the second half of
    a canonical composition (it cannot merge with the character before it, nor can its canonical
    decomposition's first character; Hangul jamo are left out whole), not U+2026 (NFKC rewrites it), not
    a surrogate. Built once per process (~0.2 s); tests/python/test_trace_windows.py checks the claim with
    Python's own functions."""
    second: set[int] = set()
    for c in range(0x30000):
        d = unicodedata.decomposition(chr(c))
        if d and not d.startswith("<"):
            parts = d.split()
            if len(parts) == 2:
                second.add(int(parts[1], 16))
    quotes = {c: (SINGLE_QUOTE if r == "'" else DOUBLE_QUOTE) for c, r in _QUOTES.items()}
    dashes = {ord(c) for c in _DASHES.pattern[1:-2]}
    table = bytearray(PLAIN_RANGE)
    for c in range(0x80, PLAIN_RANGE):
        ch = chr(c)
        if (0xD800 <= c < 0xE000 or 0x1100 <= c < 0x1200 or c in second or ch.isspace() or c == 0x2026
                or unicodedata.combining(ch) or ch.lower() != ch or unicodedata.normalize("NFKC", ch) != ch
                or ord(unicodedata.normalize("NFD", ch)[0]) in second):
            continue
        table[c] = quotes.get(c, DASH if c in dashes else PLAIN)
    return bytes(table)
