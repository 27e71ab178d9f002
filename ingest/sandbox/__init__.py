"""The offline sandbox: a real corpus, a locally trained tokenizer and a tiny GPT-2 trained on it.

Everything comes from the files of the dependencies pinned with ``==`` in pyproject.toml (their Python
source, licence files, docstrings and prose, C/C++ headers; never the interpreter's stdlib or
``/usr/include``), so the sandbox builds with no network, is byte-identical on every machine of a platform
(``mixture.json`` records and checks its sha256), and its *full* training data is known: ``mixture.json``
is the ground truth of the mixture (docs, bytes and tokens per domain), and a planted canary paragraph
(domain ``canary``) is a known memorized sequence.

    from ingest.sandbox import build_sandbox
    sb = build_sandbox("tiny", Path("warehouse/sandbox/tiny"), seed=0)
    sb.model_dir      # AutoModelForCausalLM.from_pretrained(sb.model_dir) / AutoTokenizer.from_pretrained
    sb.corpus_jsonl   # {"id", "domain", "source", "text"} per line, in training order
    sb.mixture_json   # the documented mixture

Sizes (`SIZES`): ``tiny`` (tests, ~1 minute), ``small``, ``default`` (demo, ~8 minutes of training on
2 cores). Builds are deterministic under a seed (step budget, seeded torch) and cached stage by stage.
``<|endoftext|>`` is token id 0: BOS, EOS, PAD and the document separator.
"""

from ingest.sandbox.build import IndexBuilder, SandboxPaths, build_sandbox, stage_keys
from ingest.sandbox.corpus import (
    CANARY_DOMAIN,
    DOMAINS,
    EOS_TOKEN,
    CorpusSummary,
    Document,
    collect_corpus,
    fill_mixture_tokens,
    make_canary,
    read_corpus,
)
from ingest.sandbox.sizes import SIZES, SandboxSize, get_size
from ingest.sandbox.tokenizer import EOS_ID, TokenizerSummary, load_tokenizer, round_trip_failures, train_tokenizer
from ingest.sandbox.train import TrainSummary, canary_reproduction, token_stream, train_model

__all__ = [
    "CANARY_DOMAIN",
    "DOMAINS",
    "EOS_ID",
    "EOS_TOKEN",
    "SIZES",
    "CorpusSummary",
    "Document",
    "IndexBuilder",
    "SandboxPaths",
    "SandboxSize",
    "TokenizerSummary",
    "TrainSummary",
    "build_sandbox",
    "canary_reproduction",
    "collect_corpus",
    "fill_mixture_tokens",
    "get_size",
    "load_tokenizer",
    "make_canary",
    "read_corpus",
    "round_trip_failures",
    "stage_keys",
    "token_stream",
    "train_model",
    "train_tokenizer",
]
