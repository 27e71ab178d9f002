"""Reading sentence files for the `generic` and `specific` settings.

Accepts one sentence a line, or a Tatoeba TSV export (`id<TAB>lang<TAB>text`, language codes ISO 639-3).
Problems a researcher should know about are counted and reported, not silently absorbed: empty lines,
over-long lines, lines in another language.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ingest.errors import UserError

# Tatoeba uses ISO 639-3; wordfreq uses ISO 639-1.
_ISO3 = {"eng": "en", "dan": "da", "deu": "de", "fra": "fr", "spa": "es", "ita": "it", "nld": "nl",
         "swe": "sv", "nob": "nb", "fin": "fi", "por": "pt", "pol": "pl", "rus": "ru", "jpn": "ja", "cmn": "zh"}


@dataclass
class SentenceFile:
    sentences: list[str]
    dropped: Counter = field(default_factory=Counter)


_OTHER_LANGS = ("en", "de", "fr", "es", "it", "nl", "da", "sv", "pt", "pl")


def looks_like(text: str, lang: str, margin: float = 0.5) -> bool:
    """A cheap language check: the sentence's words are, on average, at least as frequent in `lang`
    (wordfreq Zipf scale) as in any of a few common languages, up to `margin`."""
    import wordfreq

    words = wordfreq.tokenize(text, lang)
    if not words:
        return False

    def score(lg: str) -> float:
        return sum(wordfreq.zipf_frequency(w, lg) for w in words) / len(words)

    own = score(lang)
    return all(score(lg) <= own + margin for lg in _OTHER_LANGS if lg != lang)


def read_sentences(path: str | Path, lang: str = "en", max_chars: int = 500) -> SentenceFile:
    path = Path(path)
    if not path.is_file():
        raise UserError(f"sentence file {path} not found")
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw[:e.start].count(b"\n") + 1
        raise UserError(f"{path}, line {line}: not valid UTF-8; re-encode the file as UTF-8") from None
    out = SentenceFile([])
    seen: set[str] = set()
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) >= 3 and parts[0].strip().isdigit():  # Tatoeba: id, lang, text
            code = _ISO3.get(parts[1].strip(), parts[1].strip())
            if code != lang:
                out.dropped["other language (tsv column)"] += 1
                continue
            line = "\t".join(parts[2:])
        s = line.strip()
        if not s:
            out.dropped["empty line"] += 1
        elif len(s) > max_chars:
            out.dropped[f"longer than {max_chars} characters"] += 1
        elif s in seen:
            out.dropped["duplicate"] += 1
        elif not looks_like(s, lang):
            out.dropped[f"not {lang}"] += 1
        else:
            seen.add(s)
            out.sentences.append(s)
    if not out.sentences:
        reasons = ", ".join(f"{n} {r}" for r, n in out.dropped.most_common()) or "the file is empty"
        raise UserError(f"{path}: no usable {lang} sentences ({reasons}); check the file and --lang")
    total = len(out.sentences) + sum(out.dropped.values())
    if out.dropped[f"not {lang}"] > 0.5 * total:
        raise UserError(f"{path}: most lines do not look like {lang}; pass the right --lang")
    return out


def length_match(generic_lens: list[int], specific: list[tuple[str, int]], seed: int) -> list[str]:
    """Pick one specific sentence per generic sentence with a similar token length (without replacement):
    within one token, or within 10% for sentences longer than 10 tokens. Unmatched generic lengths are skipped."""
    import random

    rng = random.Random(seed)
    pool: dict[int, list[str]] = {}
    for s, n in specific:
        pool.setdefault(n, []).append(s)
    for v in pool.values():
        rng.shuffle(v)
    chosen = []
    for n in generic_lens:
        tol = max(1, int(0.1 * n)) if n > 10 else 1
        for d in sorted(range(-tol, tol + 1), key=abs):
            if pool.get(n + d):
                chosen.append(pool[n + d].pop())
                break
    return chosen
