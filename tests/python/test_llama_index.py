"""An index in a Llama-2-style tokenizer (byte fallback, `▁` word starts) while the model keeps its own:
PropMe's configuration. Oracles: the tokenizer's own round trip and id layout, the generation text itself
(word boundaries by character class), and the index-token length of the traced text."""

from __future__ import annotations

import re

import pytest

from ingest.sandbox.llama_style import BYTE_TOKENS, METASPACE, SPECIALS, save_llama_style, train_llama_style


@pytest.fixture(scope="module")
def llama(mini_stack, tmp_path_factory):
    """The mini corpus indexed with a llama-style tokenizer trained on it."""
    from ingest.index import build_index

    root = tmp_path_factory.mktemp("llama")
    texts = [d["text"] for d in mini_stack["docs"]]
    tok = train_llama_style(texts, 800)
    tok_file = save_llama_style(tok, root / "tokenizer")
    build_index([mini_stack["root"] / "corpus"], str(tok_file), root / "index", progress=False)
    return {"tok": tok, "index": root / "index", "docs": mini_stack["docs"]}


def test_layout_round_trip_and_word_starts(llama) -> None:
    tok = llama["tok"]
    vocab = tok.get_vocab()
    assert [vocab[s] for s in SPECIALS] == [0, 1, 2]
    assert [vocab[b] for b in BYTE_TOKENS] == list(range(3, 259))
    learned = [t for t, i in vocab.items() if i >= 259]
    assert learned and all(METASPACE not in t[1:] for t in learned), "a learned token crosses a word start"
    for text in ("Café naïve — 日本語 🎉\ttab  two spaces", " leading", "x", "", "a\n\nb"):
        enc = tok.encode(text, add_special_tokens=False)
        assert tok.decode(enc.ids) == text
    assert "<0xF0>" in tok.encode("🎉", add_special_tokens=False).tokens  # spelled as its UTF-8 bytes


def _tracer(index, mode):
    from ingest.trace.params import TraceParams
    from ingest.trace.run import TraceJob, open_tracer

    return open_tracer(TraceJob((str(index),), TraceParams(mode=mode)), "t")


def test_verbatim_text_is_traced_at_full_length_in_index_tokens(llama) -> None:
    doc = next(d["text"] for d in llama["docs"] if d["id"] == "py-3")
    start = doc.index(" ", 200) + 1  # a word start: the generation's own leading `▁` is then the index's
    excerpt = doc[start:start + 400]
    out = _tracer(llama["index"], "mixed").trace("g", excerpt)
    n_index_tokens = len(llama["tok"].encode(excerpt, add_special_tokens=False).ids)
    assert out.generation["n_index_tokens"] == n_index_tokens
    longest = max(out.spans, key=lambda s: s["length"])
    assert longest["length"] == n_index_tokens and longest["text"] == excerpt


@pytest.mark.parametrize("convention", ["Ġ", "▁"])
def test_text_mode_spans_start_and_end_on_word_boundaries(llama, mini_stack, convention) -> None:
    """Text mode against an index of each word-start convention: the model-tokenizer index (byte-level, `Ġ`)
    and the llama-style one (`▁`, where a lone token decodes without its space)."""
    index = mini_stack["index"] if convention == "Ġ" else llama["index"]
    doc = llama["docs"][-1]["text"]  # "The cat sat on the mat. " * 8
    gen = "zz" + doc[3:60] + "qq"  # cut mid-word at both ends, glued to letters the corpus lacks there
    out = _tracer(index, "text").trace("g", gen)
    assert out.spans, "text mode found no span (every boundary looked like the inside of a word)"
    for s in out.spans:
        text = s["text"].strip()
        at = gen.index(text)
        before, after = gen[at - 1:at], gen[at + len(text):at + len(text) + 1]
        assert not (before.isalnum() and text[0].isalnum()), (before, text)
        assert not (after.isalnum() and text[-1].isalnum()), (text, after)
        assert re.fullmatch(r"[\w .]+", text)
    assert max(s["length"] for s in out.spans) >= 4


def test_text_mode_never_cuts_inside_a_byte_spelled_character(tmp_path) -> None:
    """Byte fallback spells `é` (C3 A9) and `©` (C2 A9) as two byte tokens each; a generation `©` followed by
    corpus text matches the index from its continuation byte <0xA9> on. Mixed mode keeps that span (its text
    starts with U+FFFD); text mode must not start a span inside the character."""
    import json

    from ingest.index import build_index

    docs = ["Le café très bon est servi chaud ici. " * 6, "Un thé vert et une tarte aux pommes. " * 6]
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "docs.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in docs))
    tok = train_llama_style([d.replace("é", "e") for d in docs], 300, min_frequency=1)  # é: bytes only
    assert tok.encode("é", add_special_tokens=False).tokens[-2:] == ["<0xC3>", "<0xA9>"]
    tok_file = save_llama_style(tok, tmp_path / "tokenizer")
    build_index([tmp_path / "corpus"], str(tok_file), tmp_path / "index", progress=False)
    gen = "zz ©" + " très bon est servi chaud ici. Le caf"
    mixed = _tracer(tmp_path / "index", "mixed").trace("g", gen)
    assert any(s["text"].startswith("\ufffd") for s in mixed.spans), [s["text"] for s in mixed.spans]
    text = _tracer(tmp_path / "index", "text").trace("g", gen)
    assert text.spans and all("\ufffd" not in s["text"] for s in text.spans), [s["text"] for s in text.spans]
    assert any("très bon est servi chaud ici." in s["text"] for s in text.spans), [s["text"] for s in text.spans]
