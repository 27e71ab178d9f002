"""Bootstrap replicates of the reference word table that stand for both samples behind a merge list.

A pair count read from reference text differs from the count the tokenizer's trainer saw for two reasons:

1. the reference text is a sample of its domain, and
2. the training text was *another* sample of the same domain, of T x alpha_i bytes for domain i.

The first is what resampling the reference measures. The second is invisible to it, and on the sandbox it is
as large: the merges of a 0.33 MB tokenizer encode a handful of files per domain, and even half of the very
training files as reference misses by 0.01-0.07 (BENCHMARKS.md, issue 35). Both are sampling, so both can be
drawn: a replicate is

    F_b = F*_1 + s_i (F*_2 - F),     s_i = sqrt(R_i / (T alpha_i)),

with F*_1 and F*_2 two independent resamples of the reference (per domain column i), F the table itself and R_i
the domain's reference bytes. F*_2 - F has the spread of a mean over R_i bytes; scaled by s_i it has the spread
of one over the T alpha_i training bytes. A word's frequency in F_b may go negative; the replay and the LP are
linear in it, so nothing breaks.

The unit of resampling is the *file*: documents whose ids share the part before '#' ("code/x.py#0003") are
pieces of one file (the sandbox cuts files into 600-byte pieces) and are drawn together. Pieces of one file share
its identifiers and phrases; drawing them one by one treated 60 pieces of a file as 60 independent documents
and made the bootstrap spread 3-5 times too narrow (the factor the first calibration had to supply).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ingest.mixture.tokenizer.solve import per_byte

ALPHA_FLOOR = 0.02  # s_i uses max(alpha_i, this): a domain estimated near 0 would get an unbounded training term


def file_ids(doc_ids: list[str] | tuple[str, ...]) -> list[str]:
    """The file of each document id: the part before the first '#' (the whole id when there is none)."""
    return [d.split("#", 1)[0] for d in doc_ids]


def cluster_index(doc_domain: np.ndarray, files: list[str]) -> np.ndarray:
    """(n_docs,) one integer per (domain, file), numbered 0.. in order of first appearance."""
    ix: dict[tuple[int, str], int] = {}
    return np.array([ix.setdefault((int(dm), f), len(ix)) for dm, f in zip(doc_domain, files)], dtype=np.int64)


def training_scale(ref_bytes: np.ndarray, alpha: np.ndarray, training_bytes: float) -> np.ndarray:
    """s_i = sqrt(R_i / (T max(alpha_i, ALPHA_FLOOR))): how much the training sample's spread is of the
    reference's, per domain (0 when T is infinite: the paper's regime, training text far larger than any
    reference)."""
    if not np.isfinite(training_bytes):
        return np.zeros(len(ref_bytes))
    a = np.maximum(np.asarray(alpha, dtype=float), ALPHA_FLOOR)
    return np.sqrt(np.asarray(ref_bytes, dtype=float) / (training_bytes * a))


def resample_weights(rng: np.random.Generator, doc_domain: np.ndarray, clusters: np.ndarray) -> np.ndarray:
    """(n_docs,) how often each document is drawn: within each domain, as many clusters as it has, with
    replacement; every document of a drawn cluster comes along."""
    weight = np.zeros(doc_domain.shape[0])
    for dm in np.unique(doc_domain):
        members = np.flatnonzero(doc_domain == dm)
        ids, inv = np.unique(clusters[members], return_inverse=True)
        drawn = np.bincount(rng.integers(0, ids.size, ids.size), minlength=ids.size)
        weight[members] = drawn[inv]
    return weight


def replicate_stream(table, seed: int, *, clusters: np.ndarray | None = None,
                     scale: np.ndarray | None = None) -> Callable[[int], list[np.ndarray]]:
    """A seeded stream of replicate tables (words x domains, per million bytes; see the module docstring).
    `table`: a `estimate.WordTable`; `clusters`: (n_docs,) cluster of each document (default: each its own);
    `scale`: s_i per domain (default: none, reference sampling only)."""
    rng = np.random.default_rng(seed)
    clusters = np.arange(table.doc_domain.shape[0]) if clusters is None else np.asarray(clusters)
    F = per_byte(table.freqs(), table.word_bytes)

    def draw(n: int) -> list[np.ndarray]:
        out = []
        for _ in range(n):
            F1 = per_byte(table.freqs(resample_weights(rng, table.doc_domain, clusters)), table.word_bytes)
            if scale is not None and np.any(scale > 0):
                F2 = per_byte(table.freqs(resample_weights(rng, table.doc_domain, clusters)), table.word_bytes)
                F1 = F1 + (F2 - F) * np.asarray(scale)[None, :]
            out.append(F1)
        return out

    return draw
