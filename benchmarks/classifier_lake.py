"""Classifier outputs for the synthetic lake of `benchmarks/metrics_lake.py`, so that the mixture models
(int_mixture_*_posteriors, int_mixture_run_estimates, fct_mixture_estimates) cost in a benchmark build what they
cost on a scored lake (`lmaudit classify train` + `classify score`).

One classifier ("bench", 5 domains, calibration fold 0) with `n_reference` labelled reference documents in 5
folds, and a posterior for every generation of every run (text_hash = md5 of its text, as `classify score`
writes it). Posteriors are random (a Dirichlet draw tilted toward the item's domain): the benchmark measures cost,
not accuracy. Used by benchmarks/add_one_run.py (`--classifier`); metrics_lake.py itself is left as it is.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pyarrow as pa

from ingest.lake import Lake, make_key

DOMAINS = ["code", "books", "web", "papers", "wiki"]
NAME = "bench"


def _probs(rng: np.random.Generator, labels: np.ndarray) -> list[list[float]]:
    k = len(DOMAINS)
    p = rng.dirichlet(np.ones(k), size=len(labels))
    p[np.arange(len(labels)), labels] += 1.5
    return (p / p.sum(axis=1, keepdims=True)).tolist()


def write_classifier(home: str, n_reference: int = 2000, seed: int = 0) -> str:
    """The classifier, its reference documents and their cross-fitted posteriors; returns its id."""
    rng = np.random.default_rng(seed)
    lake = Lake(home)
    cid = make_key(NAME)
    labels = np.arange(n_reference) % len(DOMAINS)
    refs = [{"ref_doc_id": make_key("bench-refs", i), "domain": DOMAINS[y], "text": f"reference {i}",
             "split": "train", "fold": i % 5, "source": "bench", "doc_id": f"ref-{i}"} for i, y in enumerate(labels)]
    lake.write("reference_docs", "bench", refs)
    lake.write("classifiers", "bench", [{
        "classifier_id": cid, "name": NAME, "backend": "bench", "domains": DOMAINS, "temperature": 1.0,
        "params": json.dumps({"calibration_fold": 0, "n_reference": n_reference}), "fitted_on": "synthetic"}])
    lake.write("classifier_outputs", "bench-refs", [
        {"output_id": make_key(cid, r["ref_doc_id"]), "classifier_id": cid, "item_id": r["ref_doc_id"],
         "item_kind": "reference", "fold": r["fold"], "probs": p}
        for r, p in zip(refs, _probs(rng, labels))])
    return cid


def score_runs(home: str, partitions: list[str] | None = None, seed: int = 0) -> int:
    """A posterior for every generation of these generations partitions (default: all); returns how many."""
    lake = Lake(home)
    cid = make_key(NAME)
    n = 0
    for part in sorted(partitions or lake.partitions("generations")):
        gens = lake.read("generations", part).select(["generation_id", "text"])
        rng = np.random.default_rng([seed, int(hashlib.md5(part.encode()).hexdigest()[:8], 16)])
        labels = rng.integers(0, len(DOMAINS), size=gens.num_rows)
        ids = gens.column("generation_id").to_pylist()
        hashes = [hashlib.md5(t.encode()).hexdigest() for t in gens.column("text").to_pylist()]
        lake.write("classifier_outputs", f"bench-{part}", pa.table({
            "output_id": [make_key(cid, g) for g in ids], "classifier_id": [cid] * len(ids), "item_id": ids,
            "item_kind": ["generation"] * len(ids), "fold": pa.nulls(len(ids), pa.int32()),
            "probs": _probs(rng, labels), "text_hash": hashes}))
        n += len(ids)
    return n
