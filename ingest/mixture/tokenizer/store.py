"""Lake I/O of the tokenizer estimate: reference documents in, `tokenizer_mixture_estimates` rows out.

One partition per model, natural key (model, domain): estimating a model's mixture again replaces its
previous estimate (the parameters of the one kept are in `params`).
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable

from ingest.errors import UserError
from ingest.mixture.tokenizer.estimate import ReferenceText, TokenizerMixture

TABLE = "tokenizer_mixture_estimates"
ESTIMATOR = "bpe_merges"


def model_key(tokenizer: "str | Path", model: str | None = None, home: "Path | None" = None) -> str:
    """The model an estimate is about: `model` if given, else the tokenizer's folder as an absolute path
    (the sandbox documents its mixture under the model folder's path, which holds the tokenizer too). With
    the warehouse `home`, a folder inside it is relative to it (`ingest.home.stored_model`), as the sandbox
    files its documented mixture and runs record their model, so the keys stay equal after a move."""
    if model:
        key = model
    else:
        p = Path(tokenizer).expanduser().resolve()
        key = str(p.parent if p.is_file() else p)
    if home is None:
        return key
    from ingest.home import stored_model

    return stored_model(home, key)


def lake_references(lake, source: str | None = None, domains: Iterable[str] | None = None) -> list[ReferenceText]:
    """Reference documents from `reference_docs` (all sources, or one), optionally only some domains."""
    t = lake.read("reference_docs")
    rows = t.select(["domain", "text", "source", "doc_id"]).to_pylist()
    if source is not None:
        rows = [r for r in rows if r["source"] == source]
    keep = set(domains) if domains else None
    out = [ReferenceText(r["domain"], r["text"], f"{r['source']}/{r['doc_id']}") for r in rows
           if r["text"] and (keep is None or r["domain"] in keep)]
    if not out:
        what = f" of source {source!r}" if source else ""
        raise UserError(f"no reference documents{what} in the warehouse: run `lmaudit reference import FILE` "
                        "(or `lmaudit sandbox reference`), or pass --reference FILE")
    return out


def file_references(path: Path, domain_field: str = "domain", text_field: str = "text",
                    id_field: str = "id") -> list[ReferenceText]:
    """Reference documents from a JSONL/Parquet file (the format `lmaudit reference import` reads)."""
    from ingest.importers.records import iter_records

    out = []
    for n, rec in iter_records(Path(path)):
        dom, text = rec.get(domain_field), rec.get(text_field)
        if not isinstance(dom, str) or not dom or not isinstance(text, str):
            raise UserError(f"{path}: row {n} needs a string {domain_field!r} and a string {text_field!r}")
        out.append(ReferenceText(dom, text, str(rec.get(id_field, n))))
    if not out:
        raise UserError(f"{path} holds no reference documents")
    return out


def estimate_rows(est: TokenizerMixture, model: str, tokenizer: str, reference_source: str) -> list[dict]:
    """One `tokenizer_mixture_estimates` row per domain."""
    from ingest.lake import make_key

    now = datetime.now(timezone.utc)
    params = json.dumps({**est.params, "iterations": est.solution.iterations}, sort_keys=True)
    out = []
    for i, d in enumerate(est.domains):
        lo, hi = float(est.ci_low[i]), float(est.ci_high[i])
        out.append({
            "estimate_id": make_key(model, d), "model": model, "tokenizer": tokenizer,
            "tokenizer_sha256": est.tokenizer_sha256, "domain": d, "estimate": float(est.estimate[i]),
            "ci_low": None if lo != lo else lo, "ci_high": None if hi != hi else hi,
            "n_merges_used": est.n_merges_used, "n_merges_total": est.n_merges_total,
            "n_reference_docs": est.n_docs[d], "reference_bytes": est.n_bytes[d],
            "n_constraints": est.solution.n_constraints, "objective": est.solution.objective,
            "solver_status": est.solution.status, "n_boot": est.n_boot, "n_boot_failed": est.n_boot_failed,
            "seed": est.seed, "ci_level": est.level, "reference_source": reference_source, "params": params,
            "created_at": now,
        })
    return out


def write_estimate(lake, rows: list[dict]) -> None:
    """Write the model's estimate, replacing its earlier one: also one filed under the model folder's
    absolute path (before paths were relative, or in the place the warehouse was moved from), which the
    marts read as the same model (`ingest.home.model_key`) and would otherwise count twice."""
    from ingest.home import model_key as read_key
    from ingest.lake import partition_name

    ours = partition_name("tokenizer", rows[0]["model"])
    key = read_key(lake.home, rows[0]["model"])
    stale = [p for p in lake.partitions(TABLE) if p != ours
             and any(read_key(lake.home, r["model"]) == key for r in lake.read(TABLE, p).to_pylist())]
    with lake.transaction():
        lake.write(TABLE, ours, rows)
        for part in stale:
            lake.delete(TABLE, part)
