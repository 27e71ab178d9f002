"""A small benchmark drawn from a corpus, whose items' status is known by construction (the sandbox recipe).

Three kinds of item, `n` of each: `copied` (input and answer cut from one training document: contaminated),
`half` (the input's first half copied, the rest and the answer written fresh: partly) and `fresh` (written
fresh: clean). Fresh text is a seeded shuffle of words seen in the sampled documents, so its every 13-gram
is, for all practical purposes, absent from the corpus (the marts report what the index says, not this
intent). Documents are read back from the index (`IndexEngine.doc`), so any registered corpus works.
"""

from __future__ import annotations

import random
import re
from dataclasses import asdict

from ingest.contamination.items import BenchItem
from ingest.errors import UserError

INPUT_CHARS = 300
ANSWER_CHARS = 160  # long enough for several 13-token n-grams even with a tokenizer that compresses well
_WORD = re.compile(r"[A-Za-z]{3,12}")


def _cut(text: str, rng: random.Random, width: int) -> int | None:
    """A start offset after a space where `width` characters fit; None when the text is too short."""
    if len(text) < width + 1:
        return None
    at = rng.randrange(0, len(text) - width)
    nxt = text.find(" ", at)
    return nxt + 1 if 0 <= nxt < len(text) - width else None


def _fresh(words: list[str], rng: random.Random, chars: int) -> str:
    out: list[str] = []
    while sum(len(w) + 1 for w in out) < chars:
        out.append(rng.choice(words))
    return " ".join(out).capitalize() + "."


def sample_benchmark(engine, tokenizer, n: int, seed: int = 0) -> list[BenchItem]:
    """`n` copied, `n` half-copied and `n` fresh items (ids copied-000, half-000, fresh-000, ...)."""
    if n < 1:
        raise UserError(f"--n must be at least 1, got {n}")
    rng = random.Random(seed)
    order = list(range(engine.n_docs))
    rng.shuffle(order)
    need = INPUT_CHARS + ANSWER_CHARS
    cuts: list[tuple[str, int]] = []
    words: set[str] = set()
    for ix in order:
        text = tokenizer.decode(engine.doc(ix, max_len=4 * need).tokens)
        words.update(_WORD.findall(text))
        at = _cut(text, rng, need)
        if at is not None and text[at:at + need].strip() and "\ufffd" not in text[at:at + need]:
            cuts.append((text, at))
        if len(cuts) >= 2 * n and len(words) >= 200:  # (past 2n cuts while words are short: the extra ones go)
            break
    if len(cuts) < 2 * n:
        raise UserError(f"the corpus has only {len(cuts)} documents long enough ({need} characters) for "
                        f"{2 * n} copied items; ask for fewer with --n")
    vocab = sorted(words)
    items = []
    for k, (text, at) in enumerate(cuts[:n]):
        # the answer starts at a word (after a space, as the document's own tokens do), so its index tokens
        # are the document's; a cut inside a word would change its first tokens
        mid = text.rfind(" ", at + 1, at + INPUT_CHARS)
        mid = at + INPUT_CHARS if mid < 0 else mid
        items.append(BenchItem(f"copied-{k:03d}", text[at:mid], text[mid:at + need]))
    half = INPUT_CHARS // 2
    for k, (text, at) in enumerate(cuts[n:2 * n]):
        items.append(BenchItem(f"half-{k:03d}", text[at:at + half] + " " + _fresh(vocab, rng, half),
                               _fresh(vocab, rng, ANSWER_CHARS)))
    for k in range(n):
        items.append(BenchItem(f"fresh-{k:03d}", _fresh(vocab, rng, INPUT_CHARS), _fresh(vocab, rng, ANSWER_CHARS)))
    return items


def item_records(items: list[BenchItem]) -> list[dict]:
    """The benchmark file's rows: id, input, answer, and score when there is one."""
    rows = []
    for it in items:
        r = {"id": it.item_id, **asdict(it)}
        del r["item_id"]
        if r["score"] is None:
            del r["score"]
        rows.append(r)
    return rows
