"""The training mixture of a BPE tokenizer from its ordered merge list (Hayase et al., 2024, "Data Mixture
Inference: What do BPE tokenizers reveal about their training data?").

    from ingest.mixture.tokenizer import ReferenceText, estimate_tokenizer_mixture, load_bpe
    tok = load_bpe("path/to/tokenizer.json")
    est = estimate_tokenizer_mixture(tok, [ReferenceText("code", text), ...], n_boot=100, seed=0)
    est.domains, est.estimate, est.ci_low, est.ci_high

Pieces: `loading` (the merge list, the tokenizer's own word splitter, initial symbols), `counting` (one
incremental replay of the merges over the reference words, as a log of pair-count events), `solve` (the LP
with lazily added constraints), `highs` (one HiGHS model kept across the lazy rounds), `noise` (each
constraint's bootstrap standard error), `methods` (the registry: `paper`, `noise`), `estimate` (word tables,
the bootstrap over documents), `store` (the lake rows of `tokenizer_mixture_estimates`).
"""

from ingest.mixture.tokenizer.counting import MergeLog, brute_force_counts, merge_word, pair_counts, replay
from ingest.mixture.tokenizer.estimate import (ReferenceText, TokenizerMixture, WordTable,
                                               estimate_tokenizer_mixture, word_table)
from ingest.mixture.tokenizer.loading import BpeTokenizer, load_bpe
from ingest.mixture.tokenizer.methods import DEFAULT_METHOD, METHODS, MixtureMethod, get_method
from ingest.mixture.tokenizer.solve import CountReplay, LpSolution, per_byte, solve_lp, solve_mixture

__all__ = [
    "BpeTokenizer", "CountReplay", "DEFAULT_METHOD", "METHODS", "MixtureMethod", "get_method", "LpSolution", "MergeLog", "ReferenceText", "TokenizerMixture", "WordTable",
    "brute_force_counts", "estimate_tokenizer_mixture", "load_bpe", "merge_word", "pair_counts", "per_byte",
    "replay", "solve_lp", "solve_mixture", "word_table",
]
