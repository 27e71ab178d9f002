"""Sandboxes on known mixtures: budgets, equal pieces, held-out reference documents, the documented truth.

Oracles: byte counts recomputed from corpus.jsonl, hand-computed shares, the files' own ids.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest

from ingest.errors import UserError
from ingest.sandbox import collect_corpus, get_size, read_corpus
from ingest.sandbox.corpus import split_pieces
from ingest.sandbox.reference import documented_mixture_rows, held_out_documents
from ingest.sandbox.sizes import MIXTURE_CHUNK_BYTES, mixture_size, parse_mixture


def test_split_pieces_cuts_at_line_ends_and_loses_nothing():
    text = "".join(f"line {i} " + "x" * (i % 37) + "\n" for i in range(300)) + "no newline at the end"
    pieces = split_pieces(text, 200)
    assert "".join(pieces) == text
    for p in pieces:
        assert len(p.encode()) <= 200
        assert p.endswith("\n") or p is pieces[-1]
    long_line = "y" * 500 + "\n"
    assert split_pieces("a\n" + long_line + "b\n", 100) == ["a\n", long_line, "b\n"]
    pieces = split_pieces("a\n" + "   \n" * 60 + "b\n", 20)  # whitespace-only pieces are dropped
    assert pieces[0].startswith("a\n") and pieces[-1].endswith("b\n") and len(pieces) == 2


def test_parse_mixture_presets_pairs_and_errors():
    assert parse_mixture("code-heavy")[1]["code"] == 0.7
    label, w = parse_mixture("code=3, documentation=1")
    assert w == {"code": 3.0, "documentation": 1.0} and label == "mix-code75-documentation25"
    for bad in ("code", "code=abc", "", ","):
        with pytest.raises(UserError):
            parse_mixture(bad)
    with pytest.raises(UserError, match="unknown sandbox domain"):
        mixture_size("tiny", "web=1")
    with pytest.raises(UserError, match="non-negative"):
        mixture_size("tiny", "code=-1,headers=2")


def test_mixture_size_spreads_the_same_budget():
    base = get_size("tiny")
    s = mixture_size("tiny", "docs-heavy")
    total = sum(base.domain_budgets.values())
    assert sum(s.domain_budgets.values()) == pytest.approx(total, abs=4)
    assert s.domain_budgets["documentation"] == round(0.7 * total)
    assert s.canary_copies == 0 and s.chunk_bytes == MIXTURE_CHUNK_BYTES and s.name == "tiny-docs-heavy"
    assert mixture_size("tiny", "balanced", canary_copies=5).canary_copies == 5


@pytest.fixture(scope="module")
def docs_heavy(tmp_path_factory) -> tuple:
    size = mixture_size("tiny", "docs-heavy")
    out = tmp_path_factory.mktemp("mix")
    return size, collect_corpus(size, out, seed=0)


def test_mixture_corpus_follows_the_weights(docs_heavy):
    size, summary = docs_heavy
    docs = list(read_corpus(summary.corpus_jsonl))
    per = Counter()
    for d in docs:
        per[d.domain] += len(d.text.encode())
        assert len(d.text.encode()) <= size.chunk_bytes or "\n" not in d.text.rstrip("\n")
        assert "#" in d.id  # pieces carry their file id and piece number
    assert "canary" not in per
    total = sum(per.values())
    assert per["documentation"] / total == pytest.approx(0.7, abs=0.03)
    for dom in ("code", "boilerplate", "headers"):
        assert per[dom] / total == pytest.approx(0.1, abs=0.03)
    mix = json.loads(summary.mixture_json.read_text())
    assert {d: m["bytes"] for d, m in mix["domains"].items()} == dict(per)
    assert mix["chunk_bytes"] == size.chunk_bytes
    # equal pieces: the share of documents is close to the share of bytes
    n = Counter(d.domain for d in docs)
    for dom in per:
        assert n[dom] / len(docs) == pytest.approx(per[dom] / total, abs=0.05)


def test_reference_documents_are_held_out_and_cut_like_the_corpus(docs_heavy):
    size, summary = docs_heavy
    refs = held_out_documents(size, summary.corpus_jsonl, per_domain=30, seed=1)
    assert Counter(d.domain for d in refs) == {"code": 30, "boilerplate": 30, "documentation": 30, "headers": 30}
    used = {d.id.split("#")[0] for d in read_corpus(summary.corpus_jsonl)}
    for d in refs:
        assert d.id.startswith("reference/")
        assert d.id[len("reference/"):].split("#")[0] not in used
        assert d.text.strip() and len(d.text.encode()) <= max(size.chunk_bytes, max(map(len, d.text.splitlines())) + 1)
    assert refs == held_out_documents(size, summary.corpus_jsonl, per_domain=30, seed=1)  # deterministic


def test_reference_whole_files_up_to_a_byte_budget(docs_heavy):
    """pieces_per_file=0 takes every piece of a held-out file (sampled like the corpus, by whole files);
    bytes_per_domain stops a domain at the first file that reaches the budget."""
    size, summary = docs_heavy
    refs = held_out_documents(size, summary.corpus_jsonl, per_domain=10**9, pieces_per_file=0,
                              bytes_per_domain=5_000, seed=1)
    used = {d.id.split("#")[0] for d in read_corpus(summary.corpus_jsonl)}
    files: dict[str, list[int]] = {}
    for d in refs:
        fid, k = d.id[len("reference/"):].split("#")
        assert fid not in used
        files.setdefault(fid, []).append(int(k))
    assert all(ks == list(range(len(ks))) for ks in files.values())  # every piece, in order
    for dom in ("code", "boilerplate", "documentation", "headers"):
        mine = [d for d in refs if d.domain == dom]
        total = sum(len(d.text.encode()) for d in mine)
        last = mine[-1].id.split("#")[0]
        last_bytes = sum(len(d.text.encode()) for d in mine if d.id.split("#")[0] == last)
        assert total >= 5_000 > total - last_bytes


@pytest.mark.slow
def test_reference_canary_prefixes_are_distinct(tmp_path):
    size = get_size("tiny").replace(code_bytes=20_000, boilerplate_bytes=20_000, documentation_bytes=20_000,
                                    headers_bytes=0, canary_copies=30)
    summary = collect_corpus(size, tmp_path, seed=0)
    refs = held_out_documents(size, summary.corpus_jsonl, per_domain=25)
    canary = [d.text for d in refs if d.domain == "canary"]
    assert len(canary) == 25 == len(set(canary))
    assert all(summary.canary_text.startswith(t) for t in canary)
    assert "headers" not in {d.domain for d in refs}  # only the corpus's domains


def test_documented_rows_by_hand(tmp_path):
    mix = {"size": "x", "seed": 0, "domains": {
        "code": {"docs": 30, "bytes": 600, "tokens": 100},
        "canary": {"docs": 10, "bytes": 400, "tokens": 300},
        "headers": {"docs": 60, "bytes": 1000, "tokens": 600}}}
    p = tmp_path / "mixture.json"
    p.write_text(json.dumps(mix))
    rows = {r["domain"]: r["weight"] for r in documented_mixture_rows(p, "m")}
    assert rows == pytest.approx({"code": 0.3, "canary": 0.1, "headers": 0.6})
    rows = {r["domain"]: r["weight"] for r in documented_mixture_rows(p, "m", "tokens", ["code", "headers", "web"])}
    assert rows == pytest.approx({"code": 100 / 700, "headers": 600 / 700, "web": 0.0})
    src = documented_mixture_rows(p, "m", "tokens", ["code", "headers"])[0]["source"]
    assert "without canary" in src and "tokens" in src


def test_cli_rejects_bad_mixtures_and_engine_args_in_one_line(home):
    from conftest import run_cli

    bad = run_cli("sandbox", "build", "--size", "tiny", "--mixture", "web=1", home=home)
    assert bad.returncode == 2 and "unknown sandbox domain(s) web" in bad.stderr
    assert "Traceback" not in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
    bad = run_cli("sandbox", "build", "--size", "tiny", "--index-tokenizer", "gpt", home=home)
    assert bad.returncode == 2 and "choose one of model, llama-style" in bad.stderr
    assert "Traceback" not in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
    bad = run_cli("generate", "--model", "m", "--corpus", "c", "--engine-arg", "x=1", home=home)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
