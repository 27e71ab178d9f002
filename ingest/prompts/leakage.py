"""The leakage filter of the generic and specific prompts (docs/propme-method.md section 1).

A propensity prompt the model saw in training would measure its recall of the prompt, not its propensity, so a
sentence that occurs in the training index as a whole is dropped. The rule is PropMe's (paper section 4.2 and its
released prompt-set code): a sentence is dropped when

1. the whole sentence occurs in the index as a token sequence under any of the tokenizations it can have there
   (`token_variants`: the first word tokenizes differently at a document start, after a space and after a
   newline, and an exact lookup of one form misses the others), or
2. it is a substring, as it is, of a document window the tracer retrieves for it (the tracer run exactly as on
   generations, with the default TraceParams: its `exact_full_raw` tier). This catches copies whose edges
   tokenize differently in the corpus (a final "?" merged with a following quote).

`strict` (lmaudit's earlier, stricter reading, kept under its own name) also drops a sentence that a retrieved
window contains after normalization with every run of whitespace, line breaks included, collapsed to one space:
a line-wrapped copy counts there, not in PropMe's rule.
"""

from __future__ import annotations

from typing import Any

from ingest.errors import UserError
from ingest.metrics.text import collapse_whitespace
from ingest.trace.normalize import normalize_document

RULES = ("propme", "strict")
DEFAULT_RULE = "propme"


def _after(tok, prefix: str, sentence: str) -> list[int]:
    """The sentence's tokens when it follows `prefix`: the prefix's own tokens removed when they are a clean
    prefix of the encoding, else the whole encoding (e.g. a byte-level BPE folds a space into the first word:
    then the occurrence includes that space, which still means the sentence is in the corpus)."""
    head, whole = list(tok.encode(prefix)), list(tok.encode(prefix + sentence))
    return whole[len(head):] if head and whole[:len(head)] == head else whole


def token_variants(tok, sentence: str) -> list[tuple[str, list[int]]]:
    """(label, ids) of each distinct tokenization under which the whole sentence can occur in the index: as a
    document start, after a space (mid-text) and after a newline. A Metaspace tokenizer (Llama-2's) marks a
    word-initial space on the first token, which a sentence after a newline lacks; a byte-level BPE marks it on
    the word after a space, which a document start lacks. Identical sequences are looked up once."""
    out: list[tuple[str, list[int]]] = []
    for label, ids in (("document start", list(tok.encode(sentence))),
                       ("after a space", _after(tok, " ", sentence)),
                       ("after a newline", _after(tok, "\n", sentence))):
        if ids and all(ids != seen for _, seen in out):
            out.append((label, [int(t) for t in ids]))
    return out


class LeakageFilter:
    """Looks sentences up in one open corpus; the tracer (default TraceParams, as PropMe runs SimpleTrace on its
    candidates) is built once, on first use, unless one is given."""

    def __init__(self, corpus: Any, rule: str = DEFAULT_RULE, tracer: Any = None):
        if rule not in RULES:
            raise UserError(f"unknown leakage rule {rule!r}; choose one of {', '.join(RULES)}")
        self.corpus, self.rule = corpus, rule
        self._tracer = tracer

    @property
    def tracer(self):
        if self._tracer is None:
            from ingest.trace.params import TraceParams
            from ingest.trace.tracer import Tracer

            eng = self.corpus.engine
            manifest = eng.manifest
            logp = manifest.load_logprobs(self.corpus.row["index_dirs"][0])
            floor = manifest.unigram_floor if manifest.unigram_floor is not None else -30.0
            self._tracer = Tracer(eng, self.corpus.tokenizer, logp, floor, TraceParams(), "leakage-filter")
        return self._tracer

    def reason(self, sentence: str) -> str | None:
        """Why the sentence may have been seen in training (the stored `leakage_reason`), or None."""
        eng, tok = self.corpus.engine, self.corpus.tokenizer
        for label, ids in token_variants(tok, sentence):
            if eng.count(ids) > 0:
                return f"occurs in the index ({label} tokenization)"
        docs = self.tracer.trace("leakage", sentence).documents
        if any(d["match_tier"] == "exact_full_raw" for d in docs):
            return "inside a document the tracer retrieved for it"
        if self.rule == "strict":
            target = collapse_whitespace(normalize_document(sentence))
            if target and any(target in collapse_whitespace(normalize_document(d["window_text"])) for d in docs):
                return "inside a retrieved document after normalization (strict rule)"
        return None
