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
    est = {m: estimate_tokenizer_mixture(tok, refs, method=m, n_boot=6, seed=1) for m in ("paper", "noise")}
    assert est["paper"].n_merges_used == 120 and est["paper"].params["method"] == "paper"
    assert est["noise"].params["merges_chosen"] in (100, 120) and est["noise"].method == "noise"
    for e in est.values():
        assert e.estimate.sum() == pytest.approx(1.0) and np.all(e.ci_low <= e.estimate + 1e-12)
        assert np.all(e.estimate <= e.ci_high + 1e-12)
