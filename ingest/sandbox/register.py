"""Put a built sandbox into a warehouse: register its index as a corpus with its documented mixture, and
import held-out labelled reference documents for the mixture classifier. Used by `lmaudit sandbox`, the
demo and the mixture benchmarks alike, so all three register a sandbox the same way."""

from __future__ import annotations

from pathlib import Path


INDEX_TOKENIZERS = ("model", "llama-style")


def build_and_register(lake, home, size, seed: int = 0, progress: bool = True, index_tokenizer: str = "model"):
    """Build (or reuse) the sandbox under <warehouse>/sandbox/<name>-seed<seed>, register its corpus and
    write its documented mixture (share of documents per domain) into `mixtures_documented`.

    `size` is a size name or a `SandboxSize` (e.g. from :func:`sandbox_size`). `index_tokenizer="llama-style"`
    registers, as corpus ``<name>-llama``, an index of the same corpus tokenized Llama-2 style (byte fallback,
    `▁` word starts) while the model keeps its own tokenizer: PropMe's configuration (ingest/sandbox/llama_style.py)."""
    from ingest.errors import UserError

    if index_tokenizer not in INDEX_TOKENIZERS:
        raise UserError(f"unknown index tokenizer {index_tokenizer!r}; choose one of {', '.join(INDEX_TOKENIZERS)}")
    from ingest.corpora import register_corpus
    from ingest.lake.writer import partition_name
    from ingest.sandbox.build import build_sandbox
    from ingest.sandbox.indexing import sandbox_index_builder
    from ingest.sandbox.reference import documented_mixture_rows
    from ingest.sandbox.sizes import get_size

    size = get_size(size)
    paths = build_sandbox(size, home / "sandbox" / f"{size.name}-seed{seed}", seed=seed,
                          index_builder=sandbox_index_builder, progress=progress)
    base = f"sandbox-{size.name}" if seed == 0 else f"sandbox-{size.name}-seed{seed}"
    index_dir, name = paths.index_dir, base
    if index_tokenizer == "llama-style":
        from ingest.sandbox.llama_style import build_llama_style_index

        index_dir, name = build_llama_style_index(paths, progress=progress), f"{base}-llama"
    register_corpus(lake, name, [index_dir])
    # one partition per sandbox model, whichever index it is traced against (the truth is the model's)
    # every kept checkpoint was trained on the same corpus: the same truth, under its own model path
    # the paths relative to the warehouse, as its runs record them: a moved warehouse keeps the pairing
    from ingest.checkpoints import list_checkpoints
    from ingest.home import stored_model

    models = [stored_model(home, str(p)) for p in
              [paths.model_dir, *(c.path for c in list_checkpoints(paths.model_dir) if c.path != paths.model_dir)]]
    lake.write("mixtures_documented", partition_name("sandbox", base),
               [r for m in models for r in documented_mixture_rows(paths.mixture_json, m, "docs")])
    return paths, name


def import_sandbox_references(lake, paths, name: str, per_domain: int = 150, folds: int = 5, seed: int = 0):
    """Held-out reference documents of the sandbox's domains into `reference_docs` (source = the corpus name)."""
    from ingest.references import import_references
    from ingest.sandbox.reference import held_out_documents, write_reference_jsonl

    docs = held_out_documents(paths.size, paths.corpus_jsonl, per_domain=per_domain, seed=seed)
    out = paths.root / "reference.jsonl"
    write_reference_jsonl(docs, out)
    return import_references(lake, out, cap_per_domain=max(per_domain, folds), folds=folds, seed=seed,
                             source=name)


def write_specific_candidates(paths, per_domain: int = 200, prefix_bytes: int = 3000) -> Path:
    """Candidate source documents for `lmaudit prompts specific`: held-out files of the sandbox's real-text
    domains (the model never saw them; the canary is training text, so it is left out), longer pieces than
    the classifier's references so that each has several sentences. Written to `specific_candidates.jsonl`
    in the sandbox folder, with the domain as the source."""
    from ingest.sandbox.corpus import CANARY_DOMAIN
    from ingest.sandbox.reference import held_out_documents, write_reference_jsonl

    docs = held_out_documents(paths.size, paths.corpus_jsonl, per_domain=per_domain, prefix_bytes=prefix_bytes,
                              pieces_per_file=1)
    out = paths.root / "specific_candidates.jsonl"
    write_reference_jsonl((d for d in docs if d.domain != CANARY_DOMAIN), out)
    return out
