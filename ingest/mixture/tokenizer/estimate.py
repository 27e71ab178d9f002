"""The training mixture of a BPE tokenizer from its merge list and labelled reference text, with a bootstrap.

Reference documents are cut into words once (the tokenizer's own normaliser and pre-tokenizer), the merges
are replayed once on the distinct words (`counting.replay`), and every estimate, point or bootstrap
replicate, only re-weights the words (which method turns them into a mixture: `methods.METHODS`): a replicate resamples the documents of each domain with replacement
(seeded), which changes the word frequencies and nothing else. The estimate is a share of *bytes* of the
tokenizer's training text per domain (pair counts are compared per byte of reference text).
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

import numpy as np

from ingest.errors import UserError
from ingest.mixture.tokenizer.counting import MergeLog, replay
from ingest.mixture.tokenizer.loading import BpeTokenizer
from ingest.mixture.tokenizer.methods import DEFAULT_METHOD, MethodInput, get_method
from ingest.mixture.tokenizer.resample import cluster_index, file_ids, replicate_stream
from ingest.mixture.tokenizer.solve import LpSolution, per_byte


@dataclass(frozen=True)
class ReferenceText:
    domain: str
    text: str
    doc_id: str = ""


@dataclass(frozen=True)
class WordTable:
    """Distinct words of the reference documents and how often each document has each one."""

    domains: tuple[str, ...]
    words: tuple[str, ...]
    symbols: tuple[tuple[str, ...], ...]
    word_bytes: np.ndarray  # (n_words,)
    doc_domain: np.ndarray  # (n_docs,) domain index
    doc_words: "object"  # scipy.sparse csr (n_docs x n_words) of counts
    doc_file: np.ndarray | None = None  # (n_docs,) cluster of each document: one per (domain, file), see resample

    def freqs(self, doc_weight: np.ndarray | None = None) -> np.ndarray:
        """(n_words x n_domains) word frequencies, each document counted `doc_weight` times (default 1)."""
        from scipy import sparse

        n_docs = self.doc_domain.shape[0]
        w = np.ones(n_docs) if doc_weight is None else np.asarray(doc_weight, dtype=float)
        W = sparse.csr_matrix((w, (np.arange(n_docs), self.doc_domain)), shape=(n_docs, len(self.domains)))
        return np.asarray((self.doc_words.T @ W).todense())


def word_table(tok: BpeTokenizer, docs: Sequence[ReferenceText]) -> WordTable:
    """Cut every document into the tokenizer's words; documents are taken in (domain, doc_id, text) order so
    the table (and every seeded bootstrap on it) does not depend on the order they came in."""
    from scipy import sparse

    docs = sorted(docs, key=lambda d: (d.domain, d.doc_id, d.text))
    domains = tuple(sorted({d.domain for d in docs}))
    dom_ix = {d: i for i, d in enumerate(domains)}
    word_ix: dict[str, int] = {}
    r, c, v = [], [], []
    for j, d in enumerate(docs):
        for word, k in Counter(tok.words(d.text)).items():
            i = word_ix.setdefault(word, len(word_ix))
            r.append(j), c.append(i), v.append(k)
    words = tuple(word_ix)
    D = sparse.csr_matrix((np.asarray(v, dtype=float), (r, c)), shape=(len(docs), len(words)))
    doc_domain = np.array([dom_ix[d.domain] for d in docs], dtype=np.int64)
    return WordTable(domains=domains, words=words, symbols=tuple(tok.symbols(w) for w in words),
                     word_bytes=np.array([tok.word_bytes(w) for w in words], dtype=float),
                     doc_domain=doc_domain, doc_words=D,
                     doc_file=cluster_index(doc_domain, file_ids([d.doc_id for d in docs])))


@dataclass(frozen=True)
class TokenizerMixture:
    domains: tuple[str, ...]
    estimate: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    n_docs: dict[str, int]
    n_bytes: dict[str, int]
    n_merges_used: int
    n_merges_total: int
    solution: LpSolution
    n_boot: int
    n_boot_failed: int
    seed: int
    level: float
    seconds: float
    tokenizer_sha256: str
    params: dict = field(default_factory=dict)
    method: str = DEFAULT_METHOD


def bootstrap_replicates(table: WordTable, seed: int) -> "Callable[[int], list[np.ndarray]]":
    """A seeded stream of bootstrap replicates: each call returns the next n frequency tables (per million
    bytes), the reference documents of each domain resampled with replacement, one by one (the paper method's
    bootstrap; `resample.replicate_stream` draws files and the training sample as well)."""
    return replicate_stream(table, seed)


def estimate_tokenizer_mixture(tok: BpeTokenizer, docs: Iterable[ReferenceText], *, method: str = DEFAULT_METHOD,
                               max_merges: int | None = None, n_boot: int = 100, seed: int = 0,
                               level: float = 0.95, top_k: int = 5, log: MergeLog | None = None,
                               pair_slack: bool = True, training_bytes: float | None = None) -> TokenizerMixture:
    """Point estimate and interval of the `method` in `methods.METHODS` (default: the noise-weighted LP).
    `max_merges` None = the method's default (paper: the first 300; noise: chosen from the data), 0 = all.
    `pair_slack`: the paper's slack per pair as well as per merge step (`solve.solve_mixture`). `log`: a replay
    of the merges over this table's words, to reuse (benchmarks). `training_bytes`: how much text the tokenizer
    was trained on, if known (the `noise` method's bootstrap draws a training sample of that size; None = as many
    bytes as the reference text, math.inf = reference sampling only)."""
    t0 = time.perf_counter()
    spec = get_method(method)
    docs = [d for d in docs if d.text]
    table = word_table(tok, docs)
    if len(table.domains) < 1:
        raise UserError("no reference documents: import some (`lmaudit reference import`) or pass --reference")
    if log is None:
        log = replay(table.symbols, tok.merges, tok.merged)
    freqs = table.freqs()
    ref_bytes = table.word_bytes @ freqs
    res = spec.run(MethodInput(log=log, freqs=per_byte(freqs, table.word_bytes),
                               replicates=bootstrap_replicates(table, seed), n_boot=n_boot, level=level,
                               top_k=top_k, pair_slack=pair_slack, max_merges=max_merges,
                               file_replicates=lambda s: replicate_stream(table, seed, clusters=table.doc_file, scale=s),
                               ref_bytes=ref_bytes, training_bytes=training_bytes))
    groups = [np.flatnonzero(table.doc_domain == i) for i in range(len(table.domains))]
    n_docs = {d: int(g.size) for d, g in zip(table.domains, groups)}
    n_bytes = {d: int(b) for d, b in zip(table.domains, ref_bytes)}
    params = {"method": spec.name, "max_merges": max_merges, "top_k": top_k, "pair_slack": pair_slack,
              "n_boot": n_boot, "seed": seed, "ci_level": level, "basis": "bytes",
              "resample": "reference documents within each domain", **res.params}
    return TokenizerMixture(domains=table.domains, estimate=res.estimate, ci_low=res.ci_low, ci_high=res.ci_high,
                            n_docs=n_docs, n_bytes=n_bytes, n_merges_used=res.n_merges_used,
                            n_merges_total=len(tok.merges), solution=res.solution, n_boot=n_boot,
                            n_boot_failed=res.n_boot_failed, seed=seed, level=level,
                            seconds=time.perf_counter() - t0, tokenizer_sha256=tok.sha256, params=params,
                            method=spec.name)
