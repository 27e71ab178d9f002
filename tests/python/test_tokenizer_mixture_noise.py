"""bpe_merges, issue 35: the warm-started HiGHS model, the noise-weighted LP and the method registry.

Oracles: a three-word merge list whose LP optimum is worked out by hand (below), scipy's `linprog` on the full
(non-lazy) LP, and brute-force re-segmentation (`brute_force_counts`) for the bootstrap standard errors.
"""

from __future__ import annotations

import numpy as np
import pytest

from ingest.errors import UserError
from ingest.mixture.tokenizer import (CountReplay, estimate_tokenizer_mixture, get_method, load_bpe, per_byte,
                                      replay, solve_lp, solve_mixture, word_table)
from ingest.mixture.tokenizer.counting import brute_force_counts
from ingest.mixture.tokenizer.highs import WarmLp
from ingest.mixture.tokenizer.noise import noise_scale

# Hand-made: words "ab", "cd", "ef" (one pair each), merges (a, b) then (c, d). Frequencies per domain (A, B):
#   ab (10, 0), cd (1, 3), ef (8, 2).  With a = alpha_A:
#   step 0 (merge ab): cd - ab = (-9, 3) -> 3 - 12a;  ef - ab = (-2, 2) -> 2 - 4a
#   step 1 (merge cd): ef - cd = (7, -1)  -> 8a - 1
# Slack per step only: cost max(3 - 12a, 2 - 4a, 0) + max(8a - 1, 0) = 3 - 12a for a <= 1/8 and 1 + 4a above:
#   the optimum is a = 1/8, objective 1.5.
# With a slack per pair as well, u_ef relaxes ef's constraints at both steps: cost 8a - 1 for a >= 1/4 (u_ef alone)
#   and at least 2 - 4a below it: the optimum is a = 1/4, objective 1.
HAND_WORDS = [("a", "b"), ("c", "d"), ("e", "f")]
HAND_FREQS = np.array([[10.0, 0.0], [1.0, 3.0], [8.0, 2.0]])
HAND_MERGES = [("a", "b"), ("c", "d")]


def test_hand_made_merge_list_gives_the_hand_computed_optimum() -> None:
    log = replay(HAND_WORDS, HAND_MERGES)
    step = solve_mixture(log, HAND_FREQS, pair_slack=False)
    np.testing.assert_allclose(step.alpha, [1 / 8, 7 / 8], atol=1e-9)
    assert step.objective == pytest.approx(1.5, abs=1e-9) and step.status == "optimal"
    pair = solve_mixture(log, HAND_FREQS, pair_slack=True)
    np.testing.assert_allclose(pair.alpha, [1 / 4, 3 / 4], atol=1e-9)
    assert pair.objective == pytest.approx(1.0, abs=1e-9)


def test_warm_model_equals_linprog_on_the_same_rows() -> None:
    """Rows added in three batches to one HiGHS model, re-solved after each: the same optimum as scipy's linprog
    on all rows at once."""
    rng = np.random.default_rng(0)
    n, n_steps = 4, 30
    steps = rng.integers(0, n_steps, 120).tolist()
    pairs = rng.integers(0, 25, 120).tolist()
    rows = [rng.normal(size=n) for _ in range(120)]
    for pair_slack in (False, True):
        lp = WarmLp(n, pair_slack)
        for lo, hi in ((0, 40), (40, 90), (90, 120)):
            lp.add(steps[lo:hi], pairs[lo:hi], rows[lo:hi])
            _, _, _, obj = lp.solve(n_steps)
            _, _, _, ref = solve_lp(steps[:hi], rows[:hi], n, n_steps, pairs[:hi] if pair_slack else None)
            assert obj == pytest.approx(ref, abs=1e-9)


@pytest.fixture(scope="module")
def held_out(tmp_path_factory):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from test_bpe_mixture import LETTERS, domain_docs, refs_of, train_bpe

    docs = {d: domain_docs(d, 200) for d in LETTERS}
    path = train_bpe([t for d, share in zip(LETTERS, (120, 60, 20)) for t in docs[d][:share]], 120,
                     tmp_path_factory.mktemp("noise") / "tokenizer.json")
    tok = load_bpe(path)
    table = word_table(tok, refs_of({d: docs[d][150:] for d in LETTERS}))
    log = replay(table.symbols, tok.merges[:60], tok.merged)
    return tok, table, log, refs_of({d: docs[d][100:] for d in LETTERS})


def _replicates(table, n: int, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    groups = [np.flatnonzero(table.doc_domain == i) for i in range(len(table.domains))]
    out = []
    for _ in range(n):
        w = np.zeros(table.doc_domain.shape[0])
        for g in groups:
            np.add.at(w, g[rng.integers(0, g.size, g.size)], 1.0)
        out.append(per_byte(table.freqs(w), table.word_bytes))
    return out


def test_standard_errors_equal_brute_force_recounts(held_out) -> None:
    tok, table, log, _ = held_out
    log = log.first(12)
    reps = _replicates(table, 6)
    alpha0 = np.full(3, 1 / 3)
    ns = noise_scale(log, reps, alpha0)
    merges = list(tok.merges[:12])
    counts = [brute_force_counts(table.symbols, F @ alpha0, merges, tok.merged) for F in reps]
    checked = 0
    for t, C, _ in ns.replay.states(ns.weights):
        if t >= log.n_steps:
            break
        m = int(log.merge_pair[t])
        idx = np.arange(0, log.n_pairs, 7)
        got = ns.se(C, idx, m, t)
        for p, se in zip(idx.tolist(), got.tolist()):
            diff = [c[t].get(log.pairs[p], 0.0) - c[t].get(log.pairs[m], 0.0) for c in counts]
            assert se == pytest.approx(max(np.std(diff, ddof=1), ns.floor[t]), rel=1e-9, abs=1e-9)
            checked += 1
    assert checked > 100


def test_noise_weighted_lazy_lp_equals_the_full_lp_in_linprog(held_out) -> None:
    _, table, log, _ = held_out
    F = per_byte(table.freqs(), table.word_bytes)
    ns = noise_scale(log, _replicates(table, 8), np.full(3, 1 / 3))
    for pair_slack in (False, True):
        lazy = solve_mixture(log, F, top_k=2, pair_slack=pair_slack, noise=ns)
        steps, pairs, _ = CountReplay(log, F).all_constraints()
        rows = CountReplay(log, F).rows_for(list(zip(steps, pairs)), noise=ns)
        _, _, _, full = solve_lp(steps, rows, 3, log.n_steps, pairs if pair_slack else None)
        assert lazy.status == "optimal" and lazy.n_constraints < len(rows)
        assert lazy.objective == pytest.approx(full, rel=1e-9, abs=1e-9)


def test_methods_are_a_registry_and_both_run(held_out) -> None:
    tok, _, _, refs = held_out
    with pytest.raises(UserError, match="unknown bpe_merges method 'x'"):
        get_method("x")
    est = {m: estimate_tokenizer_mixture(tok, refs, method=m, n_boot=6, seed=1) for m in ("paper", "noise", "noise-v1")}
    assert est["paper"].n_merges_used == 120 and est["paper"].params["method"] == "paper"
    assert est["noise"].params["merges_chosen"] in (100, 120) and est["noise"].method == "noise"
    # noise-v1 is what the noise method computes on the way (same seed, replicates and LP): its point is the mean of
    # the document replicates; the noise method's is 2 x the LP point - that mean (clipped, renormalised)
    p = est["noise"].params
    np.testing.assert_allclose(est["noise-v1"].estimate, p["document_mean"], atol=1e-6)
    bc = np.clip(2 * np.array(p["lp_point"]) - np.array(p["document_mean"]), 0, None)
    np.testing.assert_allclose(est["noise"].estimate, bc / bc.sum(), atol=1e-5)
    assert p["interval_replicates"] == "reference files + training sample" and len(p["training_scale"]) == 3
    for e in est.values():
        assert e.estimate.sum() == pytest.approx(1.0) and np.all(e.ci_low <= e.estimate + 1e-12)
        assert np.all(e.estimate <= e.ci_high + 1e-12)


# ---- resample: files drawn together, the training sample's spread (issue 35, second pass) ----

def _tiny_table(doc_domain, doc_files, counts):
    """A `WordTable` by hand: one-symbol words of one byte each, `counts` (docs x words)."""
    from scipy import sparse

    from ingest.mixture.tokenizer import WordTable
    from ingest.mixture.tokenizer.resample import cluster_index

    counts = np.asarray(counts, dtype=float)
    dd = np.asarray(doc_domain)
    return WordTable(domains=tuple(f"d{i}" for i in range(dd.max() + 1)),
                     words=tuple(f"w{j}" for j in range(counts.shape[1])),
                     symbols=tuple((f"w{j}",) for j in range(counts.shape[1])),
                     word_bytes=np.ones(counts.shape[1]), doc_domain=dd,
                     doc_words=sparse.csr_matrix(counts), doc_file=cluster_index(dd, list(doc_files)))


def test_file_ids_and_clusters_by_hand() -> None:
    from ingest.mixture.tokenizer.resample import cluster_index, file_ids

    assert file_ids(["a/x.py#0001", "a/x.py#0002", "b", "c#1#2"]) == ["a/x.py", "a/x.py", "b", "c"]
    # the same file name in two domains is two clusters
    assert cluster_index(np.array([0, 0, 1, 1, 0]), ["f", "f", "f", "g", "g"]).tolist() == [0, 0, 1, 2, 3]


def test_training_scale_by_hand() -> None:
    from ingest.mixture.tokenizer.resample import training_scale

    # R = 100 bytes per domain, T = 400: s = sqrt(100 / (400 alpha)); alpha 0.25 -> 1, 0.5 -> sqrt(1/2),
    # 0.01 -> floored at 0.02 -> sqrt(12.5)
    got = training_scale(np.array([100.0, 100.0, 100.0]), np.array([0.25, 0.5, 0.01]), 400.0)
    np.testing.assert_allclose(got, [1.0, np.sqrt(0.5), np.sqrt(12.5)], rtol=1e-12)
    assert training_scale(np.array([5.0, 7.0]), np.array([0.5, 0.5]), float("inf")).tolist() == [0.0, 0.0]


def test_pieces_of_one_file_are_drawn_together_with_multinomial_counts() -> None:
    from ingest.mixture.tokenizer.resample import resample_weights

    # domain 0: files A (3 pieces), B (1), C (2); domain 1: file D (2 pieces), E (1)
    dd = np.array([0, 0, 0, 0, 0, 0, 1, 1, 1])
    cl = np.array([0, 0, 0, 1, 2, 2, 3, 3, 4])
    rng = np.random.default_rng(3)
    W = np.array([resample_weights(rng, dd, cl) for _ in range(4000)])
    for members in ([0, 1, 2], [4, 5], [6, 7]):
        assert np.all(W[:, members] == W[:, members[:1]])  # a file's pieces always share their weight
    assert np.all(W[:, [0, 3, 4]].sum(axis=1) == 3) and np.all(W[:, [6, 8]].sum(axis=1) == 2)
    # a file's draw count is Binomial(n_files, 1 / n_files): mean 1, variance 1 - 1/n (3 files: 2/3; 2 files: 1/2)
    np.testing.assert_allclose(W[:, [0, 3, 4, 6, 8]].mean(axis=0), 1.0, atol=0.05)
    np.testing.assert_allclose(W[:, [0, 3, 4, 6, 8]].var(axis=0), [2 / 3] * 3 + [1 / 2] * 2, rtol=0.09)


def test_one_by_one_stream_equals_the_old_document_bootstrap(held_out) -> None:
    from ingest.mixture.tokenizer.estimate import bootstrap_replicates

    _, table, _, _ = held_out
    for got, want in zip(bootstrap_replicates(table, 7)(4), _replicates(table, 4, seed=7)):
        np.testing.assert_array_equal(got, want)


def test_the_training_term_adds_s_squared_times_the_reference_variance() -> None:
    """Var(F*_1 + s (F*_2 - F)) = (1 + s^2) Var(F*) for independent resamples: checked against the plain
    resample's variance, per domain, by simulation (the oracle is the variance of a sum of independent terms)."""
    from ingest.mixture.tokenizer.resample import replicate_stream

    rng = np.random.default_rng(0)
    n_docs = 40
    dd = np.repeat([0, 1], n_docs // 2)
    files = [f"f{i // 2}" for i in range(n_docs)]  # two pieces per file
    table = _tiny_table(dd, files, rng.integers(0, 6, (n_docs, 5)))
    s = np.array([1.0, 2.0])
    plain = np.array(replicate_stream(table, 1, clusters=table.doc_file)(800))
    both = np.array(replicate_stream(table, 2, clusters=table.doc_file, scale=s)(800))
    ratio = both.var(axis=0) / plain.var(axis=0)  # (words, domains)
    np.testing.assert_allclose(np.median(ratio, axis=0), 1 + s ** 2, rtol=0.2)
    np.testing.assert_allclose(both.mean(axis=0), plain.mean(axis=0), rtol=0.06)
