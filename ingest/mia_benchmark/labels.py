"""Membership of one text in a corpus, decided by exact lookup in its index.

Why exact lookup: a member must be training text, a non-member must not be, and "held-out" files of the
same domain often share licence headers, boilerplate and copied code with the corpus (mimir's splits leak
for this reason). The rule, on the text's token ids under the index's own tokenizer (no special tokens):

- member: the text has at least `window` tokens and the whole token sequence occurs in the corpus (inside one
  document);
- non_member: the text has at least `window` tokens and none of its `window`-token windows (every start,
  stride 1) occurs anywhere in the corpus;
- ambiguous: anything else (some window occurs but not the whole text; shorter than the window; empty),
  excluded from the benchmark and counted with its reason.

The length floor holds for both labels: a few common words occur somewhere in any large corpus, so a short text
found whole is no more evidence of training than a short text not found is evidence of its absence; counting it
as a member filled the member side with phrases every model scores as likely, whatever it trained on.

All of it comes from one pass of the tracer's longest-match routine: n(b), the longest match starting at
token b, gives "the whole text occurs" (n(0) = L) and "the window at b occurs" (n(b) >= window).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

WINDOW = 50  # tokens of a non-member's windows that must all be absent (PropMe's and the tracer's long-span length)

MEMBER, NON_MEMBER, AMBIGUOUS = "member", "non_member", "ambiguous"
LABELS = (MEMBER, NON_MEMBER, AMBIGUOUS)


@dataclass(frozen=True)
class Membership:
    """The label of one token sequence and the numbers behind it."""

    label: str
    reason: str
    n_tokens: int
    longest_match: int
    n_windows: int
    n_windows_found: int


def membership_from_matches(n: Sequence[int], window: int = WINDOW) -> Membership:
    """Label a text from n(b), the longest corpus match at every start b (`ingest.trace.matching.longest_matches`)."""
    L = len(n)
    longest = max(n, default=0)
    n_windows = max(0, L - window + 1)
    found = sum(1 for b in range(n_windows) if n[b] >= window)
    if L == 0:
        return Membership(AMBIGUOUS, "empty", 0, 0, 0, 0)
    if L < window:
        where = "in corpus" if n[0] >= L else "not in corpus"
        return Membership(AMBIGUOUS, f"shorter than {window} tokens ({where}): too short to tell", L, longest, 0, 0)
    if n[0] >= L:
        return Membership(MEMBER, "whole text in corpus", L, longest, n_windows, found)
    if found == 0:
        return Membership(NON_MEMBER, f"no {window}-token window in corpus", L, longest, n_windows, 0)
    return Membership(AMBIGUOUS, "partly in corpus", L, longest, n_windows, found)


def membership(engine, ids: Sequence[int], window: int = WINDOW) -> Membership:
    """Label one token sequence against an open `IndexEngine` (ids in the index's vocabulary)."""
    from ingest.trace.matching import longest_matches

    return membership_from_matches(longest_matches(engine, list(ids)), window)
