"""PropMe's definitions as the paper (and its released code) gives them, on hand-built inputs with values worked
out by hand: the minimal cue (one word drawn per generation, seed 42, alphabetic top-100, by frequency), and the
leakage filter (the whole sentence under each tokenization of its first word, or a raw substring of a window
the tracer retrieves). The interval rule, the cumulative filters and the chance level are tested with the
marts (tests/python/test_propme_analyses_dbt.py, the dbt unit tests beside the models)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from ingest.corpora import corpus_id_for
from ingest.generate.backends import GenOutput
from ingest.generate.plan import prompt_units
from ingest.generate.runner import RunSpec, SamplingConfig, run_generation
from ingest.lake import Lake
from ingest.prompts import settings as S
from ingest.prompts.leakage import LeakageFilter, token_variants

# ------------------------------------------------------------------------------------------- minimal cue
WORDS = ["the", "2", "of", "it's", "and", "a"]  # wordfreq's list holds numbers and apostrophes; PropMe skips them
FREQ = {"the": 0.5, "of": 0.5, "and": 0.25, "a": 0.125}


@pytest.fixture
def fake_wordfreq(monkeypatch):
    import wordfreq

    monkeypatch.setattr(wordfreq, "top_n_list", lambda lang, n: WORDS[:n])
    monkeypatch.setattr(wordfreq, "word_frequency", lambda w, lang: FREQ[w])


def _corpus(name: str = "c") -> SimpleNamespace:
    tok = SimpleNamespace(name="chars", encode=lambda t: [ord(c) for c in t])
    return SimpleNamespace(corpus_id=corpus_id_for(name), tokenizer=tok)


def test_cue_words_skip_numbers_and_apostrophes(fake_wordfreq) -> None:
    assert S.cue_words("en", top_n=2) == (["the", "of"], [0.5, 0.5])
    assert S.cue_words("en", top_n=3) == (["the", "of", "and"], [0.5, 0.5, 0.25])


def test_one_cue_per_generation_drawn_as_propme_draws_it(fake_wordfreq) -> None:
    # random.Random(42).random() gives 0.639, 0.025, 0.275, 0.223, 0.736, 0.677; with weights (0.5, 0.5) a draw
    # is "of" when the number times the total (1.0) is >= 0.5: of, the, the, the, of, of
    ps = S.minimal_cue(_corpus(), 6, "en", seed=42, top_n=2)
    assert [r["text"] for r in ps.rows] == ["Of", "The", "The", "The", "Of", "Of"]
    assert len({r["prompt_id"] for r in ps.rows}) == 6  # each draw is its own prompt
    assert [r["prompt_id"] for r in S.minimal_cue(_corpus(), 6, "en", seed=42, top_n=2).rows] == \
        [r["prompt_id"] for r in ps.rows]  # same ids on a rebuild: a run resumes onto them


class _EchoBackend:
    bos_id = 1

    def encode(self, text: str) -> list[int]:
        return [ord(c) for c in text]

    def generate(self, requests, sampling):
        return [GenOutput(r.key, (7,), f"seed {r.seed}", "stop") for r in requests]


def test_each_draw_gets_one_sample_and_a_words_draws_get_samples_0_to_c(fake_wordfreq, tmp_path: Path) -> None:
    lake = Lake(tmp_path / "wh")
    ps = S.minimal_cue(_corpus("c"), 6, "en", seed=42, top_n=2).stamp("set1")
    lake.write("prompts", "cues", ps.rows)
    be = _EchoBackend()
    units = prompt_units(lake, "c", "minimal_cue", be, n_samples=10, n_generations=0)
    assert len(units) == 6 and all(u.n_samples == 1 for u in units)  # --n-samples does not apply
    text = {r["prompt_id"]: r["text"] for r in ps.rows}
    by_word: dict[str, list[int]] = {}
    for u in units:
        by_word.setdefault(text[u.prompt_id], []).append(u.first_sample)
        assert u.token_ids == (1, *[ord(c) for c in text[u.prompt_id]])
    assert {w: sorted(v) for w, v in by_word.items()} == {"The": [0, 1, 2], "Of": [0, 1, 2]}
    spec = RunSpec("cue-run", "m", "minimal_cue", "hf", None, SamplingConfig(), chunk_size=4)
    summary = run_generation(lake, be, spec, units, progress=False)
    assert summary.n_generations == 6
    gens = lake.read("generations").to_pylist()
    assert sorted((text[g["prompt_id"]], g["sample_idx"], g["seed"]) for g in gens) == [
        ("Of", 0, 42), ("Of", 1, 43), ("Of", 2, 44), ("The", 0, 42), ("The", 1, 43), ("The", 2, 44)]
    assert all(g["text"] == f"seed {g['seed']}" for g in gens)
    again = run_generation(lake, be, spec, units, progress=False)  # resumes: every chunk is done
    assert again.n_chunks_skipped == again.n_chunks == 2


# ---------------------------------------------------------------------------------------- leakage filter
class _Table:
    """A tokenizer that knows a few texts, tokenized by hand."""

    def __init__(self, table: dict[str, list[str]]):
        self.table, self.vocab = table, {}

    def encode(self, text: str) -> list[int]:
        return [self.vocab.setdefault(t, len(self.vocab)) for t in self.table[text]]


def test_token_variants_metaspace_tokenizer() -> None:
    # Llama-2-like: a word-initial space is marked on the token; after a newline the first word has no mark
    tok = _Table({"The cat": ["▁The", "▁cat"], " ": ["▁"], " The cat": ["▁", "▁The", "▁cat"],
                  "\n": ["▁", "<0x0A>"], "\nThe cat": ["▁", "<0x0A>", "The", "▁cat"]})
    got = token_variants(tok, "The cat")
    v = tok.vocab
    assert got == [("document start", [v["▁The"], v["▁cat"]]), ("after a newline", [v["The"], v["▁cat"]])]


def test_token_variants_byte_level_bpe() -> None:
    # GPT-2-like: the space belongs to the following word, a newline is its own token
    tok = _Table({"The cat": ["The", "Ġcat"], " ": ["Ġ"], " The cat": ["ĠThe", "Ġcat"],
                  "\n": ["Ċ"], "\nThe cat": ["Ċ", "The", "Ġcat"]})
    got = token_variants(tok, "The cat")
    v = tok.vocab
    assert got == [("document start", [v["The"], v["Ġcat"]]), ("after a space", [v["ĠThe"], v["Ġcat"]])]


def test_a_raw_copy_in_a_retrieved_window_drops_the_sentence(monkeypatch) -> None:
    """No tokenization of the sentence occurs (count 0), but a window the tracer retrieved holds it as it is:
    PropMe's second test drops it; a copy only equal after whitespace normalization is dropped by `strict`."""
    docs = {"A quote: He asked why?": [{"match_tier": "exact_full_raw", "window_text": 'He said "He asked why?"'}],
            "The dog ran home.": [{"match_tier": "partial", "window_text": "x The dog\nran home. y"}],
            "Zebras juggle.": [{"match_tier": "partial", "window_text": "Zebras sleep."}]}
    tok = SimpleNamespace(encode=lambda t: [ord(c) for c in t])
    corpus = SimpleNamespace(engine=SimpleNamespace(count=lambda ids: 0), tokenizer=tok)
    for rule, expected in (("propme", ["inside a document the tracer retrieved for it", None, None]),
                           ("strict", ["inside a document the tracer retrieved for it",
                                       "inside a retrieved document after normalization (strict rule)", None])):
        tracer = SimpleNamespace(trace=lambda gid, text: SimpleNamespace(documents=docs[text]))
        f = LeakageFilter(corpus, rule, tracer=tracer)
        assert [f.reason(s) for s in docs] == expected, rule


def test_leakage_filter_on_a_hand_built_index(tmp_path: Path) -> None:
    """A byte-level index of three documents: a sentence that occurs is dropped; one that occurs only wrapped
    over two lines is kept by PropMe's rule and dropped by `strict`; one that does not occur is kept."""
    from ingest.corpora import open_corpus, register_corpus
    from ingest.index import build_index

    docs = tmp_path / "docs"
    docs.mkdir()
    texts = ["Intro line. The cat sat on the mat. Outro line here.",
             "A wrapped copy follows: The dog\nran home. The end of it.",
             "Nothing to see here, really nothing at all."]
    (docs / "d.jsonl").write_text("".join(json.dumps({"text": t, "id": f"d{i}"}) + "\n" for i, t in enumerate(texts)))
    build_index([docs], "bytes", tmp_path / "idx", shards=1, progress=False)
    lake = Lake(tmp_path / "wh")
    register_corpus(lake, "hand", [tmp_path / "idx"])
    corpus = open_corpus(lake, "hand")
    sentences = ["The cat sat on the mat.", "The dog ran home.", "Zebras juggle violet pianos."]
    propme = [S.leakage_reason(corpus, s) for s in sentences]
    strict = [S.leakage_reason(corpus, s, "strict") for s in sentences]
    assert propme == ["occurs in the index (document start tokenization)", None, None]
    assert strict == ["occurs in the index (document start tokenization)",
                      "inside a retrieved document after normalization (strict rule)", None]
    ps = S.sentences(corpus, "generic", sentences, "en", source="hand", progress=False)
    assert [r["leakage_outcome"] for r in ps.rows] == ["dropped", "kept", "kept"]
    assert ps.dropped == {"occurs in the index (document start tokenization)": 1}


# ------------------------------------------------------------------------------------- intervals, no events
def test_no_event_interval_is_zero_zero_and_the_rule_of_three_is_kept_beside_it() -> None:
    """Four units, no event: every resample's ratio is 0 / (its generations), so the percentile interval is
    [0, 0] (the paper's); the rule-of-three bound is 3 / 4 = 0.75, and 3 / 2 is capped at 1 in the marts."""
    import numpy as np

    from ingest.metrics import bootstrap as bs

    num = np.zeros((4, 1))
    den = np.array([[10.0], [10.0], [9.0], [10.0]])
    reps = bs.ratio_replicates(num, den, 200, bs.stream_rng(42, "setting", "r", "t"))
    iv = bs.percentile_interval(reps[:, 0])
    assert (iv.low, iv.high, iv.n_skipped) == (0.0, 0.0, 0)
    assert bs.rule_of_three_upper(4) == 0.75 and bs.rule_of_three_upper(2) == 1.5
