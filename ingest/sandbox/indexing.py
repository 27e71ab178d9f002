"""The sandbox's index builder: the same `build_index` any corpus gets, over the sandbox corpus."""

from __future__ import annotations

from pathlib import Path


def sandbox_index_builder(corpus_jsonl: Path, tokenizer_dir: Path, out_dir: Path) -> None:
    from ingest.index.build import build_index

    build_index([str(corpus_jsonl)], str(Path(tokenizer_dir) / "tokenizer.json"), out_dir, shards=1,
                overwrite=True, progress=False)


sandbox_index_builder.cache_key = "build_index-v1"  # type: ignore[attr-defined]
