"""Builders of the prompt rows of each setting.

Text is the contract between the model and the index: a prompt's `text` is what every model receives,
encoded by the generation backend with the model's OWN tokenizer (and its start token prepended), so one
prompt set serves models whose tokenizers differ from the index's. `token_ids` keeps the index
tokenizer's ids of the text (what the leakage filter and the prefix setting work with), never sent to a
model. The boundary rules of the prefix setting are in `split_prefix` and docs/text-contract.md.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ingest.corpora import OpenCorpus
from ingest.errors import UserError
from ingest.lake import make_key
from ingest.prompts.leakage import DEFAULT_RULE, LeakageFilter

PROMPT_FREE = ("unconditional",)
PROMPTED = ("minimal_cue", "generic", "specific", "prefix")


@dataclass
class PromptSet:
    setting: str
    rows: list[dict[str, Any]]
    dropped: Counter = field(default_factory=Counter)

    def stamp(self, prompt_set: str) -> PromptSet:
        """Give every prompt the set's id: prompt ids include it, so two builds with different parameters
        never collide, and an old run keeps the prompts it was generated from."""
        from datetime import datetime, timezone

        now = datetime.now(timezone.utc)
        for r in self.rows:
            r["prompt_id"] = make_key(r["prompt_id"], prompt_set)
            r["prompt_set"] = prompt_set
            r["created_at"] = now
        return self

    @property
    def kept(self) -> list[dict[str, Any]]:
        return [r for r in self.rows if r["leakage_outcome"] in (None, "kept")]


def prompt_row(corpus: OpenCorpus, setting: str, key: object, text: str, token_ids: list[int], **extra) -> dict[str, Any]:
    return {
        "prompt_id": make_key(corpus.corpus_id, setting, key), "setting": setting, "text": text,
        "token_ids": [int(t) for t in token_ids], "tokenizer": corpus.tokenizer.name, "corpus_id": corpus.corpus_id,
        "language": None, "source": None, "source_doc": None, "true_continuation": None,
        "leakage_outcome": None, "leakage_reason": None, "prompt_set": None, "created_at": None, **extra,
    }


def unconditional(corpus: OpenCorpus) -> PromptSet:
    """One prompt: the start token only."""
    return PromptSet("unconditional", [prompt_row(corpus, "unconditional", "start", "", [], source="start token")])


def neutral(corpus: OpenCorpus) -> PromptSet:
    """lmaudit's own 36 neutral document openings (ingest/data/neutral_prefixes.json); the authors' list is
    the `llmsurgeon_neutral` setting."""
    import json
    from importlib import resources

    prefixes = json.loads((resources.files("ingest.data") / "neutral_prefixes.json").read_text())["prefixes"]
    return PromptSet("neutral", [prompt_row(corpus, "neutral", (i, p), p, corpus.tokenizer.encode(p),
                                      source="neutral prefixes (lmaudit)") for i, p in enumerate(prefixes)])


LLMSURGEON_STYLES = ("neutral", "instructional", "expository", "conversational", "coding", "category")


def llmsurgeon_prompt_list(style: str) -> list[str]:
    """The prompts LLMSurgeon's code sends for one `--prompts_style`, in its order and with its repeats.

    Their generate.py repeats each 36-prompt list 10 times and run_labelshift.py keeps the first
    `--num_prompts` (300 in every script of theirs), cycling a shorter list: so the first 12 prompts are
    used 9 times and the other 24 eight times, one generation each. `category` is their per-category style
    prompts (7 per category, defined but not used by their scripts), all categories in one list, cycled the
    same way. The lists are data (ingest/data/llmsurgeon_prompts.json, with their source)."""
    import json
    from importlib import resources
    from itertools import cycle, islice

    if style not in LLMSURGEON_STYLES:
        raise UserError(f"unknown style {style!r}; choose one of {', '.join(LLMSURGEON_STYLES)}")
    data = json.loads((resources.files("ingest.data") / "llmsurgeon_prompts.json").read_text(encoding="utf-8"))
    if style == "category":
        base = [p for prompts in data["category_styles"].values() for p in prompts]
    else:
        base = data["styles"][style] * int(data["repeat"])
    n = int(data["num_prompts"])
    return base[:n] if len(base) >= n else list(islice(cycle(base), n))


def llmsurgeon_style(corpus: OpenCorpus, style: str) -> PromptSet:
    """One prompt row per generation of LLMSurgeon's sampling (setting `llmsurgeon_<style>`): a prompt the
    authors send 9 times is 9 rows, so one sample per row reproduces their counts exactly."""
    setting = f"llmsurgeon_{style}"
    rows = [prompt_row(corpus, setting, (i, p), p, corpus.tokenizer.encode(p),
                       source=f"LLMSurgeon {style} prompts (Yaxin9Luo/LLMSurgeon generate.py)")
            for i, p in enumerate(llmsurgeon_prompt_list(style))]
    return PromptSet(setting, rows)


CUE_TOP_N = 100  # the paper's "100 most frequent words of the corpus language"


def cue_words(lang: str, top_n: int = CUE_TOP_N) -> tuple[list[str], list[float]]:
    """The `top_n` most frequent words of `lang` in wordfreq that are letters only, with their frequencies.

    wordfreq's list also holds numbers and words with an apostrophe ("2", "it's"); PropMe's released code skips
    them (it reads 3 x top_n words and keeps the first top_n alphabetic ones), so the same is done here."""
    import wordfreq

    try:
        listed = wordfreq.top_n_list(lang, top_n * 3)
    except LookupError:
        raise UserError(f"wordfreq has no word list for language {lang!r}; pass e.g. --lang en or --lang da") from None
    words = [w for w in listed if w.isalpha()][:top_n]
    if not words:
        raise UserError(f"wordfreq has no word list for language {lang!r}; pass e.g. --lang en or --lang da")
    return words, [wordfreq.word_frequency(w, lang) for w in words]


def minimal_cue(corpus: OpenCorpus, n: int, lang: str = "en", seed: int = 42, top_n: int = CUE_TOP_N) -> PromptSet:
    """n cue words, one per generation (the paper: "for each generation, the word is drawn from the 100 most
    frequent words ... weighted by frequency and capitalized"), drawn as PropMe's code draws them:
    `random.Random(seed).choices(words, weights=frequencies, k=n)`, seed 42 by default (its seed of both the
    cue draw and the generations).

    Each draw is its own prompt row, keyed by (word, k) for the k-th draw of that word, so a rebuild gives the
    same ids and a resumed run finds its generations. The generation plan gives each draw one sample and the c
    draws of a word the sample indices 0 .. c - 1 (seeds seed base + 0 .. c - 1), as PropMe samples them; the
    resampling unit of this prompt-free setting is the generation, i.e. each generation with its own cue."""
    words, weights = cue_words(lang, top_n)
    picks = random.Random(seed).choices(words, weights=weights, k=n)
    rows, seen = [], Counter()
    for w in picks:
        text = w[:1].upper() + w[1:]
        k = seen[text]
        seen[text] += 1
        rows.append(prompt_row(corpus, "minimal_cue", ("draw", text, k), text, corpus.tokenizer.encode(text),
                               language=lang, source=f"wordfreq top-{top_n} {lang}"))
    return PromptSet("minimal_cue", rows)


_filters: dict[tuple[int, str], tuple[OpenCorpus, LeakageFilter]] = {}


def leakage_reason(corpus: OpenCorpus, sentence: str, rule: str = DEFAULT_RULE) -> str | None:
    """Why a sentence may have been seen in training, or None: PropMe's leakage rule by default, `strict` for
    lmaudit's stricter reading (ingest/prompts/leakage.py). One filter (and its tracer) per open corpus."""
    key = (id(corpus), rule)
    cached = _filters.get(key)
    if cached is None or cached[0] is not corpus:
        _filters.clear()  # one corpus at a time: a build opens one
        cached = _filters[key] = (corpus, LeakageFilter(corpus, rule))
    return cached[1].reason(sentence)


def track(items, description: str, progress: bool = True):
    """`items` with a progress bar on stderr (the leakage filter looks every sentence up in the index: for
    1,000 sentences on a large index that is minutes)."""
    from rich.console import Console
    from rich.progress import track as rich_track

    return rich_track(items, description=description, console=Console(stderr=True), disable=not progress,
                      transient=True)


def sentences(corpus: OpenCorpus, setting: str, texts: list[str], lang: str, source: str,
              check_leakage: bool = True, progress: bool = True, leakage_rule: str = DEFAULT_RULE) -> PromptSet:
    rows, dropped = [], Counter()
    for i, s in enumerate(track(texts, f"{setting}: leakage filter", progress and check_leakage)):
        reason = leakage_reason(corpus, s, leakage_rule) if check_leakage else None
        if reason:
            dropped[reason] += 1
        rows.append(prompt_row(corpus, setting, (i, s), s, corpus.tokenizer.encode(s), language=lang, source=source,
                         leakage_outcome="dropped" if reason else "kept", leakage_reason=reason))
    return PromptSet(setting, rows, dropped)


def split_prefix(tok, prompt_ids: list[int], continuation_ids: list[int]) -> tuple[str, str]:
    """(prompt text, true continuation text) of a document's first tokens, cut at a character boundary.

    The prompt is the first `prompt_ids` index tokens as text, and the continuation the text of the next
    ones, both taken from ONE decoding of the whole window: decoding the pieces separately would lose the
    space a Metaspace (`▁`) tokenizer strips from the start of a decode, and a byte-level or byte-fallback
    cut inside a multi-byte character would put U+FFFD at the end of the prompt. So the prompt is the longest
    common prefix of decode(prompt) and decode(prompt + continuation) (a character cut in two moves into the
    continuation), the continuation is the rest of the whole decoding, without a trailing U+FFFD left by a
    cut at its own end. A prompt may end inside a word; the model gets that text as it is."""
    whole = tok.decode(list(prompt_ids) + list(continuation_ids))
    head = tok.decode(list(prompt_ids))
    k = 0
    for a, b in zip(head, whole):
        if a != b:
            break
        k += 1
    return whole[:k], whole[k:].rstrip("\ufffd")


def prefix(corpus: OpenCorpus, n: int, seed: int = 0, prompt_len: int = 50, continuation_len: int = 50,
           min_doc_len: int = 100, doc_ixs: Sequence[int] | None = None) -> PromptSet:
    """n training documents of >= min_doc_len tokens, sampled without replacement: the first prompt_len
    tokens are the prompt, the next continuation_len tokens the true continuation. `doc_ixs` draws only from
    those documents (a document set's targeted-extraction attack, `lmaudit audit documents --prefix-prompts`)."""
    eng, tok = corpus.engine, corpus.tokenizer
    rng = random.Random(seed)
    order = list(range(eng.n_docs)) if doc_ixs is None else sorted(set(doc_ixs))
    rng.shuffle(order)
    rows = []
    for doc_ix in order:
        if len(rows) >= n:
            break
        doc = eng.doc(doc_ix, max_len=prompt_len + continuation_len)
        if doc.doc_len < min_doc_len or len(doc.tokens) < prompt_len + continuation_len:
            continue
        p, c = doc.tokens[:prompt_len], doc.tokens[prompt_len:prompt_len + continuation_len]
        meta = doc.metadata or {}
        text, truth = split_prefix(tok, p, c)
        rows.append(prompt_row(corpus, "prefix", doc_ix, text, p, source=meta.get("source") or doc.path,
                         source_doc=str(meta.get("id") or f"doc:{doc_ix}"), true_continuation=truth))
    if not rows:
        raise UserError(f"corpus {corpus.row['name']!r} has no document of >= {min_doc_len} tokens for prefix prompts")
    return PromptSet("prefix", rows)
