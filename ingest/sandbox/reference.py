"""Reference documents and the documented mixture of a sandbox, for data-mixture estimation.

A mixture estimate needs labelled reference text per domain (to train the domain classifier and estimate
its confusion) and, to be evaluated, the true mixture. The sandbox has both for free:

* reference documents come from the same pinned sources as the training corpus but from files the corpus
  did not use (read from the other end of the hash order), cut the way the model saw its documents: the
  same pieces when the sandbox is chunked, else the first ~`prefix_bytes` of each file (an unconditional
  sample imitates the *start* of a document, and a code file starts with its docstring or license header,
  so file starts, not random windows, are what the classifier must learn). With a canary, the canary
  paragraph is a domain of its own, so regurgitations are counted rather than mislabelled.
* the truth is ``mixture.json``: documents, bytes and tokens per domain. Unconditional generations follow
  the share of *documents* (each sample starts after a separator), so that is the default basis; chunked
  sandboxes make documents equal-sized, so their document, byte and token shares agree.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Iterable

from ingest.lake.keys import make_key
from ingest.sandbox.corpus import CANARY_DOMAIN, Document, domain_sources, order_key, read_corpus, split_pieces
from ingest.sandbox.sizes import SandboxSize, get_size

BASES = ("docs", "bytes", "tokens")


def _file_id(doc_id: str) -> str:
    return doc_id.split("#", 1)[0]


def held_out_documents(size: "SandboxSize | str", corpus_jsonl: Path, per_domain: int = 150, seed: int = 0,
                       prefix_bytes: int = 600, pieces_per_file: int = 2,
                       exclude: Iterable[Path] = (), bytes_per_domain: int | None = None) -> list[Document]:
    """Up to `per_domain` reference documents per real-text domain of the corpus, from files it did not use
    (nor those of the corpus.jsonl files in `exclude`); plus up to `per_domain` prefixes of the canary when the corpus
    has one. Deterministic: the same on every machine where the corpus is (same pins, same platform).

    `pieces_per_file=0` takes every piece of a chunked file (whole files, sampled the way the corpus samples
    them, rather than two pieces of each); `bytes_per_domain` stops a domain once that many bytes are taken."""
    size = get_size(size)
    training = list(read_corpus(corpus_jsonl))
    used = {_file_id(d.id) for d in training}
    for other in exclude:
        used |= {_file_id(d.id) for d in read_corpus(other)}
    domains = sorted({d.domain for d in training})
    sources = domain_sources(size.max_file_bytes, {i for i in used if i.startswith("code/")})
    out: list[Document] = []
    for domain in domains:
        if domain == CANARY_DOMAIN:
            # distinct texts (the import dedupes): the canary's prefixes, as a sample reproducing it would start
            words = next(d for d in training if d.domain == CANARY_DOMAIN).text.split(" ")
            cuts = sorted(set(range(min(8, len(words)), len(words) + 1)))
            cuts = sorted(random.Random(f"lmaudit-reference-{seed}-canary").sample(cuts, min(per_domain, len(cuts))))
            out += [Document(f"reference/canary/{k:04d}", CANARY_DOMAIN, "canary", " ".join(words[:k]))
                    for k in cuts]
            continue
        cands, load = sources[domain]
        rng = random.Random(f"lmaudit-reference-{seed}-{domain}")
        taken = taken_bytes = 0
        # the reverse of the corpus's hash order: files a small budget never reaches come first
        for doc_id, source, _size, handle in sorted(cands, key=lambda c: order_key(c[0]), reverse=True):
            if taken >= per_domain or (bytes_per_domain is not None and taken_bytes >= bytes_per_domain):
                break
            if doc_id in used:
                continue
            text = load(handle)
            if not text or not text.strip():
                continue
            if size.chunk_bytes > 0:
                pieces = split_pieces(text, size.chunk_bytes)
                n_pick = len(pieces) if pieces_per_file <= 0 else min(pieces_per_file, len(pieces))
                picked = sorted(rng.sample(range(len(pieces)), n_pick))
            else:
                pieces, picked = split_pieces(text, prefix_bytes)[:1], [0]
            for k in picked[: per_domain - taken]:
                out.append(Document(f"reference/{doc_id}#{k:04d}", domain, source, pieces[k]))
                taken += 1
                taken_bytes += len(pieces[k].encode("utf-8"))
    return out


def write_reference_jsonl(docs: Iterable[Document], path: Path) -> int:
    """JSONL for `lmaudit reference import` (fields id, domain, source, text)."""
    n = 0
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for d in docs:
            f.write(d.to_json() + "\n")
            n += 1
    return n


def documented_mixture_rows(mixture_json: Path, model: str, basis: str = "docs",
                            domains: Iterable[str] | None = None) -> list[dict]:
    """`mixtures_documented` rows of a sandbox model: the share of each domain under `basis`.

    `domains` (the classifier's domains) get a row each, 0 where the corpus has none of them; domains of the
    corpus outside `domains` are dropped and the rest renormalized (stated in `source`).
    """
    if basis not in BASES:
        raise ValueError(f"basis must be one of {BASES}")
    mixture = json.loads(Path(mixture_json).read_text(encoding="utf-8"))
    amounts = {d: float(m.get(basis) or 0) for d, m in mixture["domains"].items()}
    keep = list(domains) if domains is not None else sorted(amounts)
    dropped = sorted(set(amounts) - set(keep))
    total = sum(amounts.get(d, 0.0) for d in keep)
    if total <= 0:
        raise ValueError(f"{mixture_json}: no {basis} in the domains {keep}")
    sha = (mixture.get("sha256") or {}).get("corpus_jsonl")  # the corpus's content hash (docs/sandbox.md)
    corpus = f", corpus sha256 {sha[:12]}" if sha else ""
    source = f"sandbox mixture.json ({mixture.get('size')}, seed {mixture.get('seed')}{corpus}): share of {basis}"
    if dropped:
        source += f", without {', '.join(dropped)}"
    return [{"mixture_id": make_key(model, d), "model": model, "domain": d,
             "weight": amounts.get(d, 0.0) / total, "source": source} for d in keep]
