"""Build a whole sandbox: corpus -> tokenizer -> (index) -> model, cached stage by stage.

Layout of `out_dir`::

    corpus/     corpus.jsonl, mixture.json (tokens filled in once the tokenizer exists), done.json
    tokenizer/  tokenizer.json, tokenizer_config.json, done.json
    index/      whatever `index_builder` writes, done.json            (only with an index_builder)
    model/      config.json, generation_config.json, model.safetensors, tokenizer files,
                train_log.json, done.json

Caching: each stage's ``done.json`` holds a hash (``key``) of everything the stage depends on: its own
knobs from the size, the keys of the stages it reads, the code version and the library versions. A call
whose keys match returns at once; a changed knob rebuilds that stage and everything downstream of it only
(``steps`` rebuilds the model; ``vocab_size`` the tokenizer, index and model; a corpus budget all).
The corpus key includes a cheap fingerprint of the pinned packages it reads (ingest/sandbox/pinned.py), so
a changed pin rebuilds; the corpus's content hash and its check are in ``corpus/mixture.json``.

Atomicity and locking: ingest/sandbox/stages.py (a stage is built in a hidden temp dir and renamed into place
with its ``done.json`` inside; concurrent builds into one `out_dir` serialize on an ``fcntl`` lock).
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional, Protocol

from ingest.sandbox.corpus import collect_corpus, fill_mixture_tokens, read_corpus
from ingest.sandbox.pinned import source_fingerprint
from ingest.sandbox.sizes import CORPUS_FIELDS, MODEL_FIELDS, TOKENIZER_FIELDS, SandboxSize, get_size
from ingest.sandbox.stages import locked, run_stage

# Bump when a stage's code changes what it writes (invalidates caches built by older code).
STAGE_VERSIONS = {"corpus": 3, "tokenizer": 1, "index": 1, "model": 1}


class IndexBuilder(Protocol):
    """``index_builder(corpus_jsonl, tokenizer_dir, out_dir)``: build the index of the corpus into out_dir.

    `out_dir` is an empty temp dir that is renamed into place afterwards. Give the callable a
    ``cache_key`` attribute (str) to version it; otherwise its module + qualified name is used.
    """

    def __call__(self, corpus_jsonl: Path, tokenizer_dir: Path, out_dir: Path) -> Any: ...


@dataclass(frozen=True)
class SandboxPaths:
    root: Path
    size: SandboxSize  # the effective size (its seed is the build's seed)
    corpus_dir: Path
    corpus_jsonl: Path
    mixture_json: Path
    tokenizer_dir: Path
    tokenizer_json: Path
    model_dir: Path
    train_log: Path
    index_dir: Optional[Path]  # None without an index_builder
    canary_text: str
    built: tuple[str, ...]  # stages (re)built by this call; () means a full cache hit
    keys: dict[str, str]  # stage -> cache key

    @property
    def seed(self) -> int:
        return self.size.seed


def _key(obj: dict) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:20]


def _builder_id(index_builder: Callable) -> str:
    key = getattr(index_builder, "cache_key", None)
    if key:
        return str(key)
    mod = getattr(index_builder, "__module__", None)
    qn = getattr(index_builder, "__qualname__", None)
    return f"{mod}:{qn}" if mod and qn else repr(index_builder)


def stage_keys(size: SandboxSize, index_builder: Callable | None = None) -> dict[str, str]:
    """The cache key of every stage for `size` (its seed included) on this machine."""
    from importlib.metadata import version  # not `import torch`: a cache hit stays instant

    from ingest.sandbox.train import use_bf16

    corpus = _key(
        {
            "v": STAGE_VERSIONS["corpus"],
            "params": size.params(CORPUS_FIELDS),
            "sources": source_fingerprint(),
        }
    )
    tokenizer = _key(
        {
            "v": STAGE_VERSIONS["tokenizer"],
            "corpus": corpus,
            "params": size.params(TOKENIZER_FIELDS),
            "tokenizers": version("tokenizers"),
            "transformers": version("transformers"),
        }
    )
    keys = {"corpus": corpus, "tokenizer": tokenizer}
    if index_builder is not None:
        keys["index"] = _key(
            {"v": STAGE_VERSIONS["index"], "tokenizer": tokenizer, "builder": _builder_id(index_builder)}
        )
    keys["model"] = _key(
        {
            "v": STAGE_VERSIONS["model"],
            "tokenizer": tokenizer,
            "params": {**size.params(MODEL_FIELDS), "bf16": use_bf16(size),
                       **({"checkpoint_every": size.checkpoint_every} if size.checkpoint_every else {})},
            "torch": version("torch"),
            "transformers": version("transformers"),
        }
    )
    return keys


def build_sandbox(
    size: "str | SandboxSize",
    out_dir: Path,
    seed: int = 0,
    index_builder: Optional[IndexBuilder] = None,
    *,
    progress: bool = True,
) -> SandboxPaths:
    """Build (or reuse) the sandbox of `size` under `out_dir`; see the module docstring for the layout.

    `seed` replaces the size's seed: it picks the canary, the document order, the model init and the
    training windows. `index_builder(corpus_jsonl, tokenizer_dir, out_dir)` is optional.
    """
    from rich.console import Console

    size = get_size(size).replace(seed=seed)
    root = Path(out_dir)
    console = Console(stderr=True, quiet=not progress)
    keys = stage_keys(size, index_builder)
    built: list[str] = []
    corpus_dir, tok_dir, model_dir = root / "corpus", root / "tokenizer", root / "model"
    index_dir = root / "index" if index_builder is not None else None

    with locked(root):
        t0 = time.perf_counter()

        def corpus_stage(tmp: Path) -> None:
            s = collect_corpus(size, tmp, seed)
            console.log(f"corpus: {s.docs} docs, {s.bytes:,} bytes, domains {', '.join(s.domains)}; "
                        f"sha256 {s.sha256[:12]} ({s.check['status']})")
            if s.check["status"] == "differs":  # a warning: the sandbox is consistent, its numbers are not the docs'
                Console(stderr=True).print(f"[yellow]warning:[/] {s.check['message']}")

        if run_stage(root, "corpus", keys["corpus"], {"params": size.params(CORPUS_FIELDS)}, corpus_stage):
            built.append("corpus")

        def tokenizer_stage(tmp: Path) -> None:
            from ingest.sandbox.tokenizer import round_trip_failures, train_tokenizer

            corpus_jsonl = corpus_dir / "corpus.jsonl"
            s = train_tokenizer(corpus_jsonl, tmp, size.vocab_size, size.min_frequency)
            bad = round_trip_failures(_load_tok(tmp), (d.text for d in read_corpus(corpus_jsonl)))
            if bad:
                raise RuntimeError(f"tokenizer round trip failed on {len(bad)}+ documents (first: #{bad[0]})")
            console.log(f"tokenizer: vocab {s.vocab_size}, round trip exact")

        meta = {"params": size.params(TOKENIZER_FIELDS), "corpus": keys["corpus"]}
        if run_stage(root, "tokenizer", keys["tokenizer"], meta, tokenizer_stage):
            built.append("tokenizer")

        mixture_json = corpus_dir / "mixture.json"
        mixture = json.loads(mixture_json.read_text(encoding="utf-8"))
        if (mixture.get("tokenizer") or {}).get("key") != keys["tokenizer"]:
            mixture = fill_mixture_tokens(
                mixture_json, corpus_dir / "corpus.jsonl", _load_tok(tok_dir), keys["tokenizer"]
            )

        if index_builder is not None:
            assert index_dir is not None

            def index_stage(tmp: Path) -> None:
                index_builder(corpus_dir / "corpus.jsonl", tok_dir, tmp)

            meta = {"tokenizer": keys["tokenizer"], "builder": _builder_id(index_builder)}
            if run_stage(root, "index", keys["index"], meta, index_stage):
                built.append("index")

        def model_stage(tmp: Path) -> None:
            from ingest.sandbox.train import train_model

            s = train_model(corpus_dir / "corpus.jsonl", tok_dir, size, tmp, progress=progress,
                            checkpoint_every=size.checkpoint_every)
            console.log(
                f"model: {s.n_params:,} params, {s.steps} steps ({s.epochs:.1f} epochs) in {s.seconds:.1f}s, "
                f"{s.tokens_per_s:,.0f} tok/s, final loss {s.final_loss:.3f}"
            )

        meta = {"params": size.params(MODEL_FIELDS), "tokenizer": keys["tokenizer"]}
        if run_stage(root, "model", keys["model"], meta, model_stage):
            built.append("model")
        if built:
            took = time.perf_counter() - t0
            console.log(f"sandbox {size.name} (seed {seed}) at {root}: built {', '.join(built)} in {took:.1f}s")

    return SandboxPaths(
        root=root,
        size=size,
        corpus_dir=corpus_dir,
        corpus_jsonl=corpus_dir / "corpus.jsonl",
        mixture_json=mixture_json,
        tokenizer_dir=tok_dir,
        tokenizer_json=tok_dir / "tokenizer.json",
        model_dir=model_dir,
        train_log=model_dir / "train_log.json",
        index_dir=index_dir,
        canary_text=mixture["canary"]["text"],
        built=tuple(built),
        keys=keys,
    )


def _load_tok(path: Path):
    from ingest.sandbox.tokenizer import load_tokenizer

    return load_tokenizer(path)


if __name__ == "__main__":  # python -m ingest.sandbox.build SIZE OUT_DIR [SEED]
    p = build_sandbox(sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else 0)
    print(json.dumps({k: str(v) for k, v in p.__dict__.items() if k not in ("canary_text",)}, indent=2))
