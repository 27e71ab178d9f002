"""Random training documents from the index, as text (what the embedders compare prompts with)."""

from __future__ import annotations

import random


def sample_doc_indices(n_docs: int, k: int, seed: int, exclude: set[int] | frozenset[int] = frozenset()) -> list[int]:
    """k distinct document indices, seeded; documents in `exclude` are skipped while others remain."""
    pool = [i for i in range(n_docs) if i not in exclude] if exclude else range(n_docs)
    if len(pool) < k and exclude:  # a small corpus: fall back to every document
        pool = range(n_docs)
    return sorted(random.Random(seed).sample(list(pool), min(k, len(pool))))


def doc_texts(corpus, indices: list[int], max_tokens: int) -> list[str]:
    """The first `max_tokens` index tokens of each document, decoded."""
    eng, tok = corpus.engine, corpus.tokenizer
    return [tok.decode(list(eng.doc(i, max_len=max_tokens).tokens)) for i in indices]
