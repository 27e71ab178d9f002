"""Index tokenization with batches encoding in background threads (`ingest.index.build._encoded`) writes the
same shard files as encoding one document at a time.

Oracle: every document encoded alone with `Tokenizer.encode`, laid out as infini-gram v4 expects (a
separator before each document, documents dealt round-robin to the shards). The build runs with batches of
1-3 documents, so many batches are in flight at once, and with the default batches: files byte-identical.
"""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from ingest.index import build as build_mod
from ingest.index import build_index, load_tokenizer


def _files(folder) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())
            if p.name.split(".")[0] in ("tokenized", "offset", "metadata", "metaoff", "unigram", "table")}


@pytest.mark.parametrize("spec", ["bytes", "bpe"])
def test_pipelined_tokenization_equals_one_document_at_a_time(spec, tmp_path, monkeypatch) -> None:
    rng = random.Random(7)
    words = "alpha beta gamma delta def return import \u00e9t\u00e9 \u2014 {} () 42\n".split(" ")
    texts = [" ".join(rng.choice(words) for _ in range(rng.randrange(1, 300))) for _ in range(41)]
    with open(tmp_path / "d.jsonl", "w") as f:
        for i, t in enumerate(texts):
            f.write(json.dumps({"text": t, "id": i}) + "\n")
    if spec == "bpe":
        from conftest import byte_level_bpe

        byte_level_bpe(texts, 320).save(str(tmp_path / "tok.json"))
        spec = str(tmp_path / "tok.json")
    tok = load_tokenizer(spec)
    build_index([tmp_path / "d.jsonl"], spec, tmp_path / "default", shards=3, progress=False)
    monkeypatch.setattr(build_mod, "_BATCH_DOCS", 2)
    monkeypatch.setattr(build_mod, "_ENCODE_AHEAD", 3)
    build_index([tmp_path / "d.jsonl"], spec, tmp_path / "small", shards=3, progress=False)
    a, b = _files(tmp_path / "default"), _files(tmp_path / "small")
    assert a.keys() == b.keys() and a == b
    dt = {1: np.uint8, 2: np.uint16, 4: np.uint32}[tok.token_width]
    for s in range(3):
        want = []
        for t in texts[s::3]:
            want += [tok.separator_id] + tok.encode(t)
        assert np.frombuffer(a[f"tokenized.{s}"], dtype=dt).tolist() == want
