"""`lmaudit reference import`: labelled reference documents into `reference_docs` (docs/mixture-method.md, section 1).

The whole file is validated before anything is written (one-line errors naming the row). Then, per domain:

- exact duplicates (same domain, same text) are dropped: a duplicate in two folds would let a fold model
  score a document it trained on, which breaks cross-fitting;
- at most `cap_per_domain` documents are kept, a seeded random sample (stable for a given seed);
- the kept documents get a cross-fitting fold in 0..folds-1: a seeded shuffle within the domain, then
  round-robin, continuing the count across domains, so every fold holds floor or ceil(n_d / folds) documents
  of every domain d and the folds have (nearly) equal sizes overall.

A domain with fewer documents than folds is an error (some fold would have none of it, and its fold model
could never predict it). Keys: `ref_doc_id = make_key(source, doc_id)`; `doc_id` is the file's id field when
present, else a hash of (domain, text). One partition per source (default: the file name), so importing
the same file again replaces its rows; re-importing with the same seed reproduces the same folds.
`split` is "train" for every imported row: classifiers train on split "train" (other values are reserved
for held-out pools).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ingest.errors import UserError
from ingest.importers.records import iter_records
from ingest.lake import Lake, make_key, partition_name

TRAIN_SPLIT = "train"
DEFAULT_CAP = 5000
DEFAULT_FOLDS = 5


@dataclass(frozen=True)
class ReferenceImportSummary:
    source: str
    n_rows: int  # rows read from the file
    kept: dict[str, int]  # per domain, after dedup and cap
    dropped_cap: dict[str, int] = field(default_factory=dict)
    dropped_duplicates: dict[str, int] = field(default_factory=dict)
    folds: int = DEFAULT_FOLDS
    replaced: bool = False

    @property
    def n_kept(self) -> int:
        return sum(self.kept.values())

    def line(self) -> str:
        per = ", ".join(f"{d} {n}" for d, n in self.kept.items())
        extra = []
        if sum(self.dropped_cap.values()):
            extra.append(f"{sum(self.dropped_cap.values())} over the cap")
        if sum(self.dropped_duplicates.values()):
            extra.append(f"{sum(self.dropped_duplicates.values())} duplicates")
        dropped = f"; dropped {', '.join(extra)}" if extra else ""
        verb = "replaced" if self.replaced else "imported"
        return (f"{verb} {self.n_kept} reference documents from {self.source!r} ({per}) in {self.folds} folds"
                f"{dropped}")


def _domain_seed(seed: int, domain: str) -> np.random.Generator:
    h = int.from_bytes(hashlib.blake2b(domain.encode("utf-8"), digest_size=8).digest(), "little")
    return np.random.default_rng([seed, h])


def _str_field(path: Path, i: int, rec: dict[str, Any], name: str, what: str) -> str:
    if name not in rec or rec[name] is None:
        raise UserError(f"{path}, row {i}: missing {what} field {name!r}; every row needs one "
                        f"(choose the field with --{what}-field)")
    v = rec[name]
    if isinstance(v, bool) or not isinstance(v, (str, int)):
        raise UserError(f"{path}, row {i}: {what} field {name!r} must be a string, got {type(v).__name__}")
    return str(v)


def assign_folds(domains: list[str], folds: int, seed: int) -> np.ndarray:
    """Stratified, seeded fold ids for documents with these domains (see the module docstring)."""
    out = np.empty(len(domains), dtype=np.int32)
    by_domain: dict[str, list[int]] = {}
    for i, d in enumerate(domains):
        by_domain.setdefault(d, []).append(i)
    offset = 0
    for d in sorted(by_domain):
        idx = np.asarray(by_domain[d])
        order = _domain_seed(seed, "folds:" + d).permutation(idx.size)
        out[idx[order]] = (offset + np.arange(idx.size)) % folds
        offset += idx.size
    return out


def import_references(lake: Lake, file: str | Path, *, domain_field: str = "domain", text_field: str = "text",
                      id_field: str = "id", cap_per_domain: int = DEFAULT_CAP, folds: int = DEFAULT_FOLDS,
                      seed: int = 0, source: str | None = None) -> ReferenceImportSummary:
    """Validate `file`, dedupe, cap, assign folds and write one `reference_docs` partition."""
    file = Path(file)
    if folds < 2:
        raise UserError(f"--folds must be at least 2 (cross-fitting needs a held-out fold), got {folds}")
    if cap_per_domain < folds:
        raise UserError(f"--cap-per-domain ({cap_per_domain}) must be at least --folds ({folds})")
    source = source if source is not None else file.name
    if not source.strip():
        raise UserError("--source must not be empty")

    seen_ids: dict[str, int] = {}
    seen_text: set[tuple[str, str]] = set()
    docs: list[dict[str, Any]] = []
    dupes: Counter[str] = Counter()
    n_rows = 0
    for i, rec in iter_records(file):
        n_rows += 1
        text = rec.get(text_field)
        if text is None:
            raise UserError(f"{file}, row {i}: missing text field {text_field!r}; every row needs the document "
                            "text (choose the field with --text-field)")
        if not isinstance(text, str):
            raise UserError(f"{file}, row {i}: text field {text_field!r} must be a string, got {type(text).__name__}")
        if not text.strip():
            raise UserError(f"{file}, row {i}: empty text; remove the row (an empty document has no domain signal)")
        domain = _str_field(file, i, rec, domain_field, "domain").strip()
        if not domain:
            raise UserError(f"{file}, row {i}: empty domain in field {domain_field!r}")
        doc_id = None
        if id_field and rec.get(id_field) is not None:
            doc_id = _str_field(file, i, rec, id_field, "id")
            if doc_id in seen_ids:
                raise UserError(f"{file}, row {i}: duplicate id {doc_id!r} (first seen at row {seen_ids[doc_id]})")
            seen_ids[doc_id] = i
        if (domain, text) in seen_text:
            dupes[domain] += 1
            continue
        seen_text.add((domain, text))
        if doc_id is None:
            doc_id = "h:" + make_key(domain, text)
        docs.append({"domain": domain, "text": text, "doc_id": doc_id, "row": i})
    if not docs:
        raise UserError(f"{file}: no reference documents found; the file is empty")

    by_domain: dict[str, list[dict[str, Any]]] = {}
    for d in docs:
        by_domain.setdefault(d["domain"], []).append(d)
    kept: list[dict[str, Any]] = []
    kept_n: dict[str, int] = {}
    dropped_cap: dict[str, int] = {}
    for domain in sorted(by_domain):
        members = by_domain[domain]
        if len(members) < folds:
            raise UserError(f"{file}: domain {domain!r} has {len(members)} document(s), fewer than --folds {folds}; "
                            f"add documents or lower --folds")
        if len(members) > cap_per_domain:
            pick = np.sort(_domain_seed(seed, "cap:" + domain).choice(len(members), cap_per_domain, replace=False))
            dropped_cap[domain] = len(members) - cap_per_domain
            members = [members[j] for j in pick]
        kept_n[domain] = len(members)
        kept.extend(members)
    fold_ids = assign_folds([d["domain"] for d in kept], folds, seed)

    rows = [{
        "ref_doc_id": make_key(source, d["doc_id"]), "domain": d["domain"], "text": d["text"], "split": TRAIN_SPLIT,
        "fold": int(f), "source": source, "doc_id": d["doc_id"],
    } for d, f in zip(kept, fold_ids)]
    part = partition_name("ref", source)
    replaced = part in lake.partitions("reference_docs")
    sha = hashlib.sha256(file.read_bytes()).hexdigest()
    lake.write("reference_docs", part, rows, meta={
        "source_sha256": sha, "folds": folds, "seed": seed, "cap_per_domain": cap_per_domain,
        "domain_field": domain_field, "text_field": text_field})
    return ReferenceImportSummary(source=source, n_rows=n_rows, kept=kept_n, dropped_cap=dropped_cap,
                                  dropped_duplicates=dict(dupes), folds=folds, replaced=replaced)
