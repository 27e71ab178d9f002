"""Where a span sits in its generation's text, and where the matched text sits in a document window.

The lake keeps spans in index tokens (`start_tok`, `end_tok`) with their decoded `text`, not character
offsets, and the explorer has no tokenizer. Token order is character order, so spans sorted by `start_tok`
start at non-decreasing characters: each span is looked for at or after the previous span's start (one
character later when its first token is later). A span whose text is not in the generation (a token cut
inside a multi-byte character decodes to a replacement character) gets no offsets: it is listed, not
highlighted.
"""

from __future__ import annotations

from collections.abc import Iterable


def locate_spans(text: str, spans: Iterable[dict]) -> dict[str, tuple[int, int] | None]:
    """span_id -> (char_start, char_end) in `text`, or None when the span's text cannot be placed.

    Full-match spans cover the whole text. Each other span is the leftmost occurrence of its text at or after
    the previous placed span's start, which keeps the order of `start_tok`."""
    out: dict[str, tuple[int, int] | None] = {}
    prev_tok, prev_char = -1, 0
    for s in sorted(spans, key=lambda s: (s["start_tok"], s["end_tok"], s["span_id"])):
        t = s.get("text") or ""
        if s.get("is_full"):
            out[s["span_id"]] = (0, len(text))
            continue
        if not t:
            out[s["span_id"]] = None
            continue
        lo = prev_char + (1 if s["start_tok"] > prev_tok and prev_tok >= 0 else 0)
        at = text.find(t, min(lo, len(text)))
        if at < 0:
            at = text.find(t)  # order broken by an earlier misplacement: any occurrence beats none
        if at < 0:
            out[s["span_id"]] = None
            continue
        out[s["span_id"]] = (at, at + len(t))
        prev_tok, prev_char = s["start_tok"], at
    return out


def segments(text: str, placed: dict[str, tuple[int, int] | None]) -> list[dict]:
    """Cut `text` at every span boundary: [{start, end, spans: [span_id, ...]}], covering the whole text.
    The page colours a segment by the longest (or rarest) span covering it."""
    cuts = {0, len(text)}
    for se in placed.values():
        if se is not None:
            cuts.update(se)
    cuts_sorted = sorted(c for c in cuts if 0 <= c <= len(text))
    out = []
    for a, b in zip(cuts_sorted, cuts_sorted[1:]):
        cover = [sid for sid, se in placed.items() if se is not None and se[0] <= a and b <= se[1]]
        out.append({"start": a, "end": b, "spans": cover})
    return out


def window_match(window: str | None, span_text: str | None) -> tuple[int, int] | None:
    """(start, end) of the span's text in a document window: the occurrence nearest the window's middle
    (the tracer centres each window on the match), or None when it is not there."""
    if not window or not span_text:
        return None
    hits, at = [], window.find(span_text)
    while at >= 0:
        hits.append(at)
        at = window.find(span_text, at + 1)
    if not hits:
        return None
    mid = (len(window) - len(span_text)) / 2
    best = min(hits, key=lambda h: (abs(h - mid), h))
    return best, best + len(span_text)
