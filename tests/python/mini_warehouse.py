"""A small warehouse whose corpus, tokenizer and index all live inside it, as a sandbox's do: the fixture of
the moved-warehouse tests (a copy or a move must find them at their new place, never at the old one)."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import byte_level_bpe

from ingest.lake import Lake


def mini_texts(seed: int) -> list[str]:
    """Twelve 60-word documents; another seed gives other documents (and so another tokenizer and index)."""
    words = ["river", "stone", "lamp", "orchard", "winter", "signal", "copper", "harbor", "meadow", "engine"]
    return [" ".join(words[(i * 7 + j * (3 + seed)) % len(words)] + str((i + j + seed) % 5) for j in range(60))
            for i in range(12)]


def mini_warehouse(home: Path, seed: int) -> None:
    """Build `mini_texts(seed)`'s corpus, BPE tokenizer and index under home/sandbox/mini; register corpus 'mini'."""
    from ingest.corpora import register_corpus
    from ingest.index import build_index

    Lake(home).init()
    root = home / "sandbox" / "mini"
    (root / "corpus").mkdir(parents=True)
    (root / "tok").mkdir()
    texts = mini_texts(seed)
    with open(root / "corpus" / "docs.jsonl", "w") as fh:
        fh.writelines(json.dumps({"text": t, "id": f"s{seed}-d{i}"}) + "\n" for i, t in enumerate(texts))
    byte_level_bpe(texts, 300 + seed).save(str(root / "tok" / "tokenizer.json"))
    build_index([root / "corpus"], str(root / "tok" / "tokenizer.json"), root / "index", progress=False)
    register_corpus(Lake(home), "mini", [root / "index"])


def mini_prebuilt(home: Path, seed: int, with_ids: bool = True) -> tuple[list[str], Path]:
    """A prebuilt index folder inside the warehouse (home/prebuilt/data, no lmaudit manifest or unigram table,
    as a published index comes) and its tokenizer, attached as corpus 'pub': (the documents' texts, tokenizer)."""
    from ingest.corpora import attach_corpus
    from ingest.index import build_index

    Lake(home).init()
    texts = mini_texts(seed)
    src = home / "prebuilt" / "src"
    src.mkdir(parents=True)
    src.joinpath("docs.jsonl").write_text("".join(
        json.dumps({"text": t, "id": f"d{i}"} if with_ids else {"text": t}) + "\n" for i, t in enumerate(texts)))
    tok = home / "prebuilt" / "tokenizer.json"
    byte_level_bpe(texts, 300).save(str(tok))
    build_index([src], str(tok), home / "prebuilt" / "data", progress=False)
    for extra in ("lmaudit-index.json", "lmaudit-logprob.npy"):
        (home / "prebuilt" / "data" / extra).unlink()
    attach_corpus(Lake(home), "pub", [home / "prebuilt" / "data"], str(tok))
    return texts, tok
