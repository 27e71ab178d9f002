"""`prompts build` says why a set has fewer prompts, or fewer distinct ones, than `--n` asked for.

Oracles: the mini corpus's documents are known, so the number of documents long enough for a prefix prompt
is counted here from the index itself; the distinct cue words are counted from the rows written.
"""

from __future__ import annotations

from ingest.corpora import open_corpus, register_corpus
from ingest.lake import Lake
from ingest.prompts.build import build_prompt_set


def test_notes_say_why_fewer_prompts(mini_stack, home) -> None:
    lake = Lake(home)
    register_corpus(lake, "mini", [mini_stack["index"]])
    eng = open_corpus(lake, "mini").engine
    long_docs = sum(1 for i in range(eng.n_docs) if eng.doc(i, max_len=100).doc_len >= 100)
    assert 0 < long_docs < eng.n_docs  # the one-sentence "cat" document is too short
    ps, notes = build_prompt_set(lake, "mini", "prefix", n=1000, progress=False)
    assert len(ps.rows) == long_docs
    assert f"{long_docs} of 1,000 prompts: only {long_docs} of the corpus's {eng.n_docs} training documents have " \
           ">= 100 tokens" in "; ".join(notes)
    ps, notes = build_prompt_set(lake, "mini", "minimal_cue", n=300, progress=False)
    distinct = len({r["text"] for r in ps.rows})
    assert distinct < 300 and f"300 prompts use {distinct} distinct words" in "; ".join(notes)
    assert "wordfreq top-100 en" in "; ".join(notes)
    _, notes = build_prompt_set(lake, "mini", "prefix", n=2, progress=False)
    assert not [x for x in notes if "of the corpus's" in x]  # as many as asked: nothing to explain
