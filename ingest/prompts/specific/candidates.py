"""Candidate source documents and the one sentence each contributes.

A candidate file is JSON Lines, one document a line: ``{"text": ..., "source": ..., "id": ...}`` (`source`
and `id` optional; a sandbox's `reference.jsonl` works as it is, read with `source_field="domain"`).
Which sources are eligible (content created after the model's training data, or documented as not used) is
the user's decision; the file's `source` names are kept with every prompt so the choice stays visible.
"""

from __future__ import annotations

import json
import random
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from ingest.errors import UserError


@dataclass(frozen=True)
class CandidateDoc:
    doc_id: str
    source: str
    text: str


@dataclass(frozen=True)
class Candidate:
    """One sentence taken from one candidate document."""
    doc_id: str
    source: str
    text: str
    n_tokens: int  # index tokens (the unit of the generic set's lengths)


def read_candidate_docs(path: str | Path, source_field: str = "source") -> list[CandidateDoc]:
    """Documents of a JSON Lines file; a document's source is its `source_field` value (then `source`,
    `domain`, the file name)."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"candidate file {path} not found; pass a JSON Lines file with a \"text\" field per line")
    docs, seen = [], set()
    with path.open("rb") as fh:
        for i, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw)
            except (ValueError, UnicodeDecodeError):
                raise UserError(f"{path}, line {i}: not valid JSON; one JSON object a line is expected") from None
            if not isinstance(obj, dict) or not isinstance(obj.get("text"), str):
                raise UserError(f"{path}, line {i}: each line needs a string \"text\" field")
            source = _first_present(obj, (source_field, "source", "domain"), path.stem)
            doc_id = str(_first_present(obj, ("id", "doc_id"), f"{path.name}:{i}"))
            if doc_id in seen:
                raise UserError(f"{path}, line {i}: id {doc_id!r} appears twice; ids must be unique")
            seen.add(doc_id)
            docs.append(CandidateDoc(doc_id, str(source), obj["text"]))
    if not docs:
        raise UserError(f"{path}: no candidate documents; the file is empty")
    return docs


def _first_present(obj: dict, keys: tuple[str, ...], default):
    """The first of `keys` that is present and not null/empty-string (an id of 0 is an id)."""
    for k in keys:
        v = obj.get(k)
        if v is not None and v != "":
            return v
    return default


def sample_per_source(docs: list[CandidateDoc], per_source: int, seed: int) -> list[CandidateDoc]:
    """Up to `per_source` documents of each source, drawn at random (seeded), in a stable order."""
    by_source: dict[str, list[CandidateDoc]] = defaultdict(list)
    for d in docs:
        by_source[d.source].append(d)
    out = []
    for source in sorted(by_source):
        group = by_source[source]
        rng = random.Random(f"{seed}:{source}")
        out.extend(group if len(group) <= per_source else rng.sample(group, per_source))
    return out


_SPLIT = re.compile(r"(?<=[.!?])[\"')\]]?\s+(?=[\"'(\[]?[A-Z])")
_NOT_PROSE = re.compile(r"[{}<>|\\`=_#@*$~^]|https?:|www\.|\.\.\.|\s{2,}")


def split_sentences(text: str) -> list[str]:
    """Whole prose sentences of a document: paragraphs (blank-line separated) with their line breaks joined,
    cut after ., ! or ? followed by a capitalised word. A sentence must start with a capital letter (or an
    opening quote or bracket before one), end with terminal punctuation, and hold no markup or code
    characters; anything else is not a sentence a person would type as a prompt."""
    out = []
    for para in re.split(r"\n\s*\n", text):
        flat = " ".join(para.split())
        for s in _SPLIT.split(flat):
            s = s.strip()
            if len(s) < 2 or not re.match(r"[\"'(\[]?[A-Z]", s) or s[-1] not in ".!?\"')]":
                continue
            if _NOT_PROSE.search(s):
                continue
            letters = sum(c.isalpha() for c in s)
            if letters < 0.7 * sum(not c.isspace() for c in s):
                continue
            out.append(s)
    return out


def length_tolerance(n: int) -> int:
    """Within one token, or within 10% above 10 tokens (the generic-set matching rule)."""
    return max(1, int(0.1 * n)) if n > 10 else 1


def pick_sentence(doc: CandidateDoc, targets: list[int], encode, is_language, rng: random.Random) -> Candidate | None:
    """One sentence of `doc` whose index-token length is within tolerance of a target length and which
    passes the language check. Targets are tried in the order given (lengths drawn from the generic set);
    within a target the closest length wins, ties broken at random."""
    sents = [(s, len(encode(s))) for s in split_sentences(doc.text)]
    for target in targets:
        tol = length_tolerance(target)
        fits = sorted((abs(n - target), rng.random(), s, n) for s, n in sents if abs(n - target) <= tol)
        for _, _, s, n in fits:
            if is_language(s):
                return Candidate(doc.doc_id, doc.source, s, n)
    return None


def function_word_share(text: str, lang: str) -> float:
    """Share of the words that are among the language's 100 most frequent (wordfreq): prose in the language
    has many, a list of names or identifiers has almost none."""
    import wordfreq

    words = wordfreq.tokenize(text, lang)
    if not words:
        return 0.0
    top = _top_words(lang)
    return sum(w in top for w in words) / len(words)


_TOP: dict[str, frozenset[str]] = {}


def _top_words(lang: str) -> frozenset[str]:
    if lang not in _TOP:
        import wordfreq

        _TOP[lang] = frozenset(wordfreq.top_n_list(lang, 100))
    return _TOP[lang]
