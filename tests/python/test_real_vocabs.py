"""The papers' real tokenizers, offline: llama.cpp's GGUF vocabularies (from the pinned llama-cpp-python sdist on
the package registry) rebuilt as each family's Hugging Face tokenizer (ingest/vocabs/), then used by the
commands that index, trace and infer mixtures (issue 29 item 3).

Oracles: the ids llama.cpp ships for its 47 test texts per vocabulary (its own tokenizer's output, an
implementation independent of ours); the `gguf` package's reader for our GGUF parser; a textbook BPE (lowest
rank first) for the merge replay of the tokenizer-mixture method; the tokenizer's own id count for the
index-token lengths of a trace. The download (76 MB, once per machine, cached) needs the package registry:
without it these tests skip and say so.
"""

from __future__ import annotations

import json

import pytest

from ingest.vocabs import gguf, llamacpp

WITH_CASES = ["llama-spm", "gpt-2", "mpt", "starcoder", "llama-bpe", "falcon"]


@pytest.fixture(scope="module")
def cache():
    from ingest.errors import UserError

    try:
        return llamacpp.fetch()
    except UserError as e:
        pytest.skip(f"the real vocabularies could not be fetched: {e}")


@pytest.fixture(scope="module")
def folders(cache, tmp_path_factory):
    root = tmp_path_factory.mktemp("vocabs")
    return {n: gguf.save_tokenizer_folder(cache / f"ggml-vocab-{n}.gguf", root / n)
            for n in ("llama-spm", "gpt-2", "gpt-neox")}


@pytest.mark.parametrize("name", WITH_CASES)
def test_every_test_text_encodes_to_llama_cpp_ids(cache, name):
    tok = gguf.tokenizer_from_gguf(cache / f"ggml-vocab-{name}.gguf")
    cases = llamacpp.expected_cases(name, cache)
    assert len(cases) == 47
    wrong = [(c.text, tok.encode(c.text, add_special_tokens=False).ids, c.ids) for c in cases
             if tok.encode(c.text, add_special_tokens=False).ids != c.ids]
    assert not wrong, wrong[:3]


def test_gpt_neox_is_mpt_vocabulary(cache):
    """GPT-NeoX ships no test texts; MPT uses the GPT-NeoX-20B tokenizer: same tokens, same merges."""
    neox = gguf.read_gguf_vocab(cache / "ggml-vocab-gpt-neox.gguf")
    mpt = gguf.read_gguf_vocab(cache / "ggml-vocab-mpt.gguf")
    assert neox.family == "gpt-neox" and mpt.family == "mpt"
    assert neox.tokens[:50254] == mpt.tokens[:50254] and neox.merges == mpt.merges


def test_gguf_parser_equals_the_gguf_package(cache):
    gguf_pkg = pytest.importorskip("gguf")
    path = cache / "ggml-vocab-llama-spm.gguf"
    fields = gguf_pkg.GGUFReader(path).fields
    ours = gguf.read_gguf_metadata(path)
    for key in ("tokenizer.ggml.tokens", "tokenizer.ggml.token_type", "tokenizer.ggml.bos_token_id",
                "tokenizer.ggml.model", "general.architecture"):
        theirs = fields[key].contents()
        assert ours[key] == (list(theirs) if isinstance(theirs, list) else theirs), key
    assert ours["tokenizer.ggml.scores"] == pytest.approx(list(fields["tokenizer.ggml.scores"].contents()))


def test_bad_gguf_is_one_line(tmp_path, capsys):
    from ingest.cli.main import run

    (tmp_path / "x.gguf").write_bytes(b"GGUF\x09\x00\x00\x00" + b"\x00" * 16)
    assert run(["vocab", "convert", str(tmp_path / "x.gguf"), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error:") and "GGUF version 9" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_convert_checks_the_shipped_ids_and_writes_a_loadable_folder(cache, tmp_path, capsys):
    from transformers import AutoTokenizer

    from ingest.cli.main import run

    out = tmp_path / "llama2"
    assert run(["vocab", "convert", str(cache / "ggml-vocab-llama-spm.gguf"), "--out", str(out)]) == 0
    assert "47 of 47" in capsys.readouterr().out
    tok = AutoTokenizer.from_pretrained(str(out))
    # Llama-2's tokenizer starts with BOS (1) and writes "Hello world" as ▁Hello ▁world (15043, 3186)
    assert tok("Hello world").input_ids == [1, 15043, 3186]
    assert (tok.bos_token, tok.eos_token) == ("<s>", "</s>")
    assert json.loads((out / "lmaudit_gguf.json").read_text())["family"] == "default"


@pytest.mark.slow
@pytest.mark.parametrize("name", ["llama-spm", "gpt-neox"])
def test_index_and_trace_in_the_real_vocabulary(folders, mini_stack, tmp_path, name):
    """An excerpt of a corpus document is traced as one span as long as the tokenizer's own encoding of it."""
    from tokenizers import Tokenizer

    from ingest.index import build_index
    from ingest.trace.params import TraceParams
    from ingest.trace.run import TraceJob, open_tracer

    build_index([mini_stack["root"] / "corpus"], str(folders[name]), tmp_path / "index", progress=False)
    doc = next(d["text"] for d in mini_stack["docs"] if d["id"] == "py-3")
    start = doc.index(" ", 200) + 1
    excerpt = doc[start:start + 300]
    out = open_tracer(TraceJob((str(tmp_path / "index"),), TraceParams(mode="mixed")), "t").trace("g", excerpt)
    n = len(Tokenizer.from_file(str(folders[name] / "tokenizer.json")).encode(excerpt, add_special_tokens=False).ids)
    assert out.generation["n_index_tokens"] == n
    assert max(s["length"] for s in out.spans) >= n - 1  # SentencePiece's added "▁" may not be in the corpus


def _textbook_bpe(symbols, ranks):
    """Merge the adjacent pair of lowest rank until none is mergeable (the BPE definition)."""
    symbols = list(symbols)
    while len(symbols) > 1:
        pairs = [(ranks.get((a, b)), i) for i, (a, b) in enumerate(zip(symbols, symbols[1:]))]
        pairs = [p for p in pairs if p[0] is not None]
        if not pairs:
            break
        _, i = min(pairs)
        symbols[i:i + 2] = [symbols[i] + symbols[i + 1]]
    return symbols


@pytest.mark.parametrize("name", ["gpt-2", "llama-spm"])
def test_tokenizer_mixture_reads_real_merges_as_the_tokenizer_applies_them(folders, name):
    """The merge-list method (lmaudit mixture tokenizer) splits text into words and symbols its own way: on a
    real vocabulary, merging those symbols by rank gives exactly the tokenizer's tokens."""
    from tokenizers import Tokenizer

    from ingest.mixture.tokenizer.loading import load_bpe

    bpe = load_bpe(folders[name])
    real = Tokenizer.from_file(str(folders[name] / "tokenizer.json"))
    ranks = {m: r for r, m in enumerate(bpe.merges)}
    text = ("The quick brown fox jumps over the lazy dog. def main(argv):\n    return 0  # naïve café, 1984\n"
            "Tokenizers split text into words; BPE merges characters pairwise.")
    got = [t for w in bpe.words(text) for t in _textbook_bpe(bpe.symbols(w), ranks)]
    assert got == real.encode(text, add_special_tokens=False).tokens
