"""The documents of an indexed corpus as one Arrow table: what `--where` conditions and id files select from.

Read straight from each shard's `metadata.<s>` file (one JSON line per document, in document order), not
document by document through the engine: an attached index can hold millions of documents. `doc_ix` is the
engine's numbering across shards (shards in the engine's load order), the same number the tracer writes into
`span_documents.doc_ix`, so a selected set joins the traces on it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa

from ingest.errors import UserError
from ingest.index.engine import IndexEngine

DOCUMENT_SCHEMA = pa.schema([
    ("shard", pa.int32()), ("doc_ix", pa.int64()), ("doc_id", pa.string()), ("source", pa.string()),
    ("domain", pa.string()), ("path", pa.string()), ("linenum", pa.int64()), ("metadata", pa.string()),
])


def _text(value) -> str | None:
    return None if value is None else str(value)


def corpus_documents(engine: IndexEngine) -> pa.Table:
    """One row per document: its numbers, its `id` / `source` / `domain` metadata fields, the input file and
    line it came from, and all of its metadata as JSON (NULLs when the index has no metadata files)."""
    cols: dict[str, list] = {f.name: [] for f in DOCUMENT_SCHEMA}
    base = 0
    for shard in range(engine.num_shards):
        folder, s = engine.shard_files(shard)
        manifest = engine.manifests[engine.data_dirs.index(folder)]
        n_docs = manifest.shards[s].n_docs
        meta_file = Path(folder) / f"metadata.{s}"
        lines = iter(())
        if meta_file.is_file():
            lines = meta_file.open("rb")
        try:
            for i in range(n_docs):
                raw = next(lines, None)
                try:
                    rec = json.loads(raw) if raw and raw.strip() else {}
                except (ValueError, RecursionError):
                    raise UserError(f"{meta_file}: line {i + 1} is not JSON; the index's metadata is damaged: rebuild "
                                    "or re-attach it") from None
                rec = rec if isinstance(rec, dict) else {}
                meta = rec.get("metadata") if isinstance(rec.get("metadata"), dict) else {}
                cols["shard"].append(shard)
                cols["doc_ix"].append(base + i)
                cols["doc_id"].append(_text(meta.get("id")))
                cols["source"].append(_text(meta.get("source")))
                cols["domain"].append(_text(meta.get("domain")))
                cols["path"].append(_text(rec.get("path")))
                cols["linenum"].append(rec.get("linenum") if isinstance(rec.get("linenum"), int) else None)
                cols["metadata"].append(json.dumps(meta, sort_keys=True, ensure_ascii=False) if meta else None)
        finally:
            if hasattr(lines, "close"):
                lines.close()
        base += n_docs
    return pa.Table.from_pydict(cols, schema=DOCUMENT_SCHEMA)
