"""Infini-gram (v4) suffix-array indexes of a training corpus: build, attach, query.

`build_index` tokenizes JSONL/Parquet documents and builds the index with the `rust_indexing` binary of
the infini-gram wheel; `attach_index` describes an index built elsewhere (`check_index_folder` checks one
that has its manifest); `IndexEngine` queries either, validating the folder first (`ingest.index.checks`)
because the C++ engine crashes (or silently miscounts) on damaged input, and raising `IndexDamaged` for
impossible values it reads later.
"""

from ingest.index.build import IndexBuildError, attach_index, build_index, check_index_folder, unigram_logprobs
from ingest.index.checks import IndexDamaged, validate_index_files
from ingest.index.manifest import LOGPROB_NAME, MANIFEST_NAME, IndexManifest, ShardInfo, SourceFile, check_index_path
from ingest.index.engine import DocRecord, EngineError, FindResult, IndexEngine, check_response
from ingest.index.readers import Document, iter_documents, list_input_files
from ingest.index.tokenizer import BytesTokenizer, Tokenizer, dtype_for_vocab, load_tokenizer, separator_id

__all__ = [
    "LOGPROB_NAME",
    "MANIFEST_NAME",
    "BytesTokenizer",
    "DocRecord",
    "Document",
    "EngineError",
    "FindResult",
    "IndexBuildError",
    "IndexDamaged",
    "IndexEngine",
    "IndexManifest",
    "ShardInfo",
    "SourceFile",
    "Tokenizer",
    "attach_index",
    "build_index",
    "check_index_folder",
    "check_index_path",
    "check_response",
    "dtype_for_vocab",
    "iter_documents",
    "list_input_files",
    "load_tokenizer",
    "separator_id",
    "unigram_logprobs",
    "validate_index_files",
]
