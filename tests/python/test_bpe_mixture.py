"""bpe_merges: the training mixture from a BPE tokenizer's merge list (ingest/mixture/tokenizer/).

A toy corpus of three synthetic "domains" (random words over different letter sets) is mixed in known
proportions and a real byte-level BPE is trained on it with the `tokenizers` library. With the training text
itself as reference text the answer is known exactly: every merge is the most frequent pair at the true
weights (slack 0). Checked against brute force: the incremental pair counts equal a from-scratch
re-segmentation after every merge, and the lazily built LP has the optimum of the LP with every constraint.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest

from ingest.errors import UserError
from ingest.mixture.tokenizer import (CountReplay, ReferenceText, brute_force_counts, estimate_tokenizer_mixture,
                                      load_bpe, merge_word, per_byte, replay, solve_lp, solve_mixture, word_table)

LETTERS = {"a": "abcdefgh", "b": "efghijkl", "c": "ijklmnop"}
ALPHA_DOCS = {"a": 0.6, "b": 0.3, "c": 0.1}
N_DOCS = 200


def domain_docs(name: str, n: int, seed: int = 0) -> list[str]:
    rng = random.Random(f"{name}-{seed}")
    vocab = ["".join(rng.choice(LETTERS[name]) for _ in range(rng.randint(2, 7))) for _ in range(300)]
    weights = [1.0 / (i + 1) for i in range(len(vocab))]
    return [" ".join(rng.choices(vocab, weights, k=40)) for _ in range(n)]


def train_bpe(texts: list[str], n_merges: int, path: Path, byte_fallback: bool = False) -> Path:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    if byte_fallback:  # Llama/Mistral style: characters, "\u2581" for spaces, bytes <0xXX> for the rest
        tok = Tokenizer(models.BPE(byte_fallback=True, unk_token="<unk>"))
        tok.pre_tokenizer = pre_tokenizers.Metaspace()
        tok.decoder = decoders.Metaspace()
        alphabet = sorted(set("".join(texts).replace(" ", "\u2581")) | {"\u2581"})
        special = ["<unk>"] + [f"<0x{b:02X}>" for b in range(256)]
        trainer = trainers.BpeTrainer(vocab_size=len(special) + len(alphabet) + n_merges, min_frequency=1,
                                      special_tokens=special, initial_alphabet=alphabet, show_progress=False)
    else:
        tok = Tokenizer(models.BPE())
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(vocab_size=256 + n_merges, min_frequency=1, show_progress=False,
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(texts, trainer=trainer)
    tok.save(str(path))
    return path


@pytest.fixture(scope="module")
def toy(tmp_path_factory) -> dict:
    docs = {d: domain_docs(d, N_DOCS) for d in LETTERS}
    train = {d: docs[d][: int(ALPHA_DOCS[d] * N_DOCS)] for d in LETTERS}
    texts = [t for d in LETTERS for t in train[d]]
    path = train_bpe(texts, 250, tmp_path_factory.mktemp("toy") / "tokenizer.json")
    nbytes = {d: sum(len(t.encode()) for t in train[d]) for d in LETTERS}
    truth = np.array([nbytes[d] / sum(nbytes.values()) for d in sorted(LETTERS)])
    return {"docs": docs, "train": train, "path": path, "truth": truth}


def refs_of(by_domain: dict[str, list[str]]) -> list[ReferenceText]:
    return [ReferenceText(d, t, f"{d}-{i}") for d, texts in by_domain.items() for i, t in enumerate(texts)]


def test_merge_word_is_left_to_right_without_overlaps() -> None:
    assert merge_word(("a", "a", "a"), "a", "a", "aa") == ("aa", "a")
    assert merge_word(("a", "a", "a", "a"), "a", "a", "aa") == ("aa", "aa")
    assert merge_word(("x", "a", "b", "a", "b"), "a", "b", "ab") == ("x", "ab", "ab")


def test_incremental_counts_equal_brute_force(toy) -> None:
    tok = load_bpe(toy["path"])
    table = word_table(tok, refs_of({d: toy["docs"][d][:30] for d in LETTERS}))
    merges = tok.merges[:60]
    log = replay(table.symbols, merges, tok.merged)
    F = table.freqs()
    brute = brute_force_counts(table.symbols, F, merges, tok.merged)
    for t, C, _ in CountReplay(log, F).states(np.ones(F.shape[1])):
        got = {log.pairs[p]: C[p] for p in np.flatnonzero(np.abs(C).sum(axis=1) > 0)}
        want = brute[t]
        assert got.keys() == {p for p, v in want.items() if np.any(v)}, t
        for p, v in want.items():
            np.testing.assert_allclose(got[p], v, err_msg=f"step {t} pair {p}")


def test_the_merges_are_the_argmax_of_the_training_counts(toy) -> None:
    """The replay is the trainer's: with the training text, each merge has the highest count (ties allowed)."""
    tok = load_bpe(toy["path"])
    table = word_table(tok, refs_of(toy["train"]))
    log = replay(table.symbols, tok.merges, tok.merged)
    F = table.freqs()
    for t, _, w in CountReplay(log, F).states(np.ones(F.shape[1])):
        if t < log.n_steps:
            assert log.merge_pair[t] >= 0 and w[log.merge_pair[t]] == w.max(), t


def test_the_training_text_gives_back_the_true_mixture(toy) -> None:
    tok = load_bpe(toy["path"])
    est = estimate_tokenizer_mixture(tok, refs_of(toy["train"]), n_boot=0)
    assert est.domains == ("a", "b", "c")
    assert est.solution.objective == pytest.approx(0, abs=1e-6)
    np.testing.assert_allclose(est.estimate, toy["truth"], atol=0.01)
    # the truth itself violates no constraint of the full LP
    table = word_table(tok, refs_of(toy["train"]))
    log = replay(table.symbols, tok.merges, tok.merged)
    _, _, rows = CountReplay(log, per_byte(table.freqs(), table.word_bytes)).all_constraints()
    assert max(r @ toy["truth"] for r in rows) <= 1e-6


def test_lazy_constraints_reach_the_optimum_of_the_full_lp(toy) -> None:
    """Held-out text of each domain: the slack is positive; adding constraints lazily gives the full LP's optimum."""
    tok = load_bpe(toy["path"])
    table = word_table(tok, refs_of({d: toy["docs"][d][150:] for d in LETTERS}))
    merges = tok.merges[:80]
    log = replay(table.symbols, merges, tok.merged)
    Fn = per_byte(table.freqs(), table.word_bytes)
    lazy = solve_mixture(log, Fn, top_k=2, pair_slack=False)
    steps, _, rows = CountReplay(log, Fn).all_constraints()
    alpha, _, _, objective = solve_lp(steps, rows, Fn.shape[1], log.n_steps)
    assert lazy.status == "optimal" and lazy.objective > 0
    assert lazy.n_constraints < len(rows)
    assert lazy.objective == pytest.approx(objective, rel=1e-6)
    # the lazy optimum is feasible for every constraint of the full LP (it may be another optimal vertex)
    viol = max(r @ lazy.alpha - lazy.slack[t] for t, r in zip(steps, rows))
    assert viol <= 1e-6 * max(1.0, objective)


def test_lazy_constraints_with_pair_slack_reach_the_optimum_of_the_full_lp(toy) -> None:
    """The paper's LP (a slack per merge step and one per pair): lazily built = every constraint at once."""
    tok = load_bpe(toy["path"])
    table = word_table(tok, refs_of({d: toy["docs"][d][150:] for d in LETTERS}))
    log = replay(table.symbols, tok.merges[:80], tok.merged)
    Fn = per_byte(table.freqs(), table.word_bytes)
    lazy = solve_mixture(log, Fn, top_k=2, pair_slack=True)
    steps, pairs, rows = CountReplay(log, Fn).all_constraints()
    _, _, u_full, objective = solve_lp(steps, rows, Fn.shape[1], log.n_steps, pairs)
    assert lazy.status == "optimal" and 0 < lazy.objective and lazy.n_constraints < len(rows)
    assert lazy.objective == pytest.approx(objective, rel=1e-6)
    u = np.zeros(log.n_pairs)
    for p, v in lazy.pair_slack.items():
        u[p] = v
    viol = max(r @ lazy.alpha - lazy.slack[t] - u[p] for t, p, r in zip(steps, pairs, rows))
    assert viol <= 1e-6 * max(1.0, objective)
    # seeded with a solution's constraints (as bootstrap replicates are), the same optimum in at most one more round
    again = solve_mixture(log, Fn, top_k=2, pair_slack=True, seed_keys=lazy.keys)
    assert again.objective == pytest.approx(objective, rel=1e-6) and again.iterations <= 1
    # the per-pair slack can only lower the optimum of the LP with per-step slack alone
    assert objective <= solve_mixture(log, Fn, top_k=2, pair_slack=False).objective + 1e-6


def test_an_over_represented_pair_costs_once_with_pair_slack(toy) -> None:
    """Known answer: the training text as reference, plus one string in domain c's reference that the training
    text never had ("zqx" 40 times: a name only the reference files use). Its pairs out-count the late merges
    at every step. With a slack per pair it is paid once and the mixture is exact; with slack per step alone
    it is paid at every step, and the LP takes weight from c."""
    tok = load_bpe(toy["path"])
    ref = {d: list(v) for d, v in toy["train"].items()}
    ref["c"] = ref["c"] + [" ".join(["zqx"] * 40)]
    table = word_table(tok, refs_of(ref))
    log = replay(table.symbols, tok.merges, tok.merged)
    Fn = per_byte(table.freqs(), table.word_bytes)
    train_bytes = np.array([sum(len(t.encode()) for t in toy["train"][d]) for d in sorted(LETTERS)])
    want = toy["truth"] / train_bytes * (table.word_bytes @ table.freqs())  # c's reference has 160 more bytes
    want = want / want.sum()
    with_pairs = solve_mixture(log, Fn, pair_slack=True)
    np.testing.assert_allclose(with_pairs.alpha, want, atol=1e-6)
    assert len(with_pairs.pair_slack) > 0
    steps_only = solve_mixture(log, Fn, pair_slack=False)
    assert np.abs(steps_only.alpha - want).max() > 0.01


def test_merge_log_prefix_equals_a_replay_of_fewer_merges(toy) -> None:
    tok = load_bpe(toy["path"])
    table = word_table(tok, refs_of({d: toy["docs"][d][:20] for d in LETTERS}))
    full = replay(table.symbols, tok.merges, tok.merged).first(50)
    short = replay(table.symbols, tok.merges[:50], tok.merged)
    assert [full.pairs[i] for i in full.merge_pair] == [short.pairs[i] for i in short.merge_pair]
    F = table.freqs()

    def nonzero(log, C):
        return {log.pairs[p]: tuple(C[p]) for p in np.flatnonzero(np.abs(C).sum(axis=1) > 0)}

    states = zip(CountReplay(full, F).states(np.ones(3)), CountReplay(short, F).states(np.ones(3)))
    n = 0
    for (_, C1, _), (_, C2, _) in states:
        assert nonzero(full, C1) == nonzero(short, C2)
        n += 1
    assert n == 51


@pytest.mark.slow
def test_held_out_text_recovers_the_mixture_with_an_interval(toy) -> None:
    tok = load_bpe(toy["path"])
    refs = refs_of({d: toy["docs"][d][100:] for d in LETTERS})
    est = estimate_tokenizer_mixture(tok, refs, n_boot=10, seed=3)
    assert np.abs(est.estimate - toy["truth"]).mean() < 0.03
    assert np.all(est.ci_low <= est.ci_high) and est.n_boot_failed == 0
    again = estimate_tokenizer_mixture(tok, list(reversed(refs)), n_boot=10, seed=3)  # seeded, order-free
    np.testing.assert_array_equal(est.ci_low, again.ci_low)
    np.testing.assert_array_equal(est.estimate, again.estimate)


def test_byte_fallback_bpe(tmp_path) -> None:
    docs = {d: domain_docs(d, 60) for d in ("a", "c")}
    train = {"a": docs["a"][:40], "c": docs["c"][:15]}
    path = train_bpe([t for v in train.values() for t in v], 120, tmp_path / "tokenizer.json", byte_fallback=True)
    tok = load_bpe(path)
    assert not tok.byte_level and tok.byte_fallback
    assert tok.words("ab cd") == ["\u2581ab", "\u2581cd"]
    assert tok.symbols("\u2581a\u00e9") == ("\u2581", "a", "<0xC3>", "<0xA9>")  # not in the vocabulary: bytes
    est = estimate_tokenizer_mixture(tok, refs_of(train), n_boot=0)
    nbytes = np.array([sum(len(t.encode()) for t in train[d]) for d in ("a", "c")])
    np.testing.assert_allclose(est.estimate, nbytes / nbytes.sum(), atol=0.02)


def test_tokenizers_without_a_merge_list_are_refused_in_one_line(tmp_path) -> None:
    from tokenizers import Tokenizer, models

    cases = {
        "unigram": Tokenizer(models.Unigram([("a", -1.0), ("b", -2.0)])),
        "wordpiece": Tokenizer(models.WordPiece({"[UNK]": 0, "a": 1}, unk_token="[UNK]")),
        "nomerges": Tokenizer(models.BPE({"a": 0, "b": 1}, [])),
    }
    for name, tok in cases.items():
        tok.save(str(tmp_path / f"{name}.json"))
        with pytest.raises(UserError) as e:
            load_bpe(tmp_path / f"{name}.json")
        assert "\n" not in str(e.value)
    assert "Unigram" in _err(tmp_path / "unigram.json") and "WordPiece" in _err(tmp_path / "wordpiece.json")
    assert "without merges" in _err(tmp_path / "nomerges.json")
    (tmp_path / "bad.json").write_text("{not json")
    assert "not valid JSON" in _err(tmp_path / "bad.json")
    assert "no tokenizer.json" in _err(tmp_path / "missing")


def _err(path: Path) -> str:
    with pytest.raises(UserError) as e:
        load_bpe(path)
    return str(e.value)


def test_cli_writes_the_estimate_and_the_marts_glue_shows_it(toy, tmp_path) -> None:
    from typer.testing import CliRunner

    from ingest.cli.main import app
    from ingest.marts.mixture import ESTIMATES_SCHEMA
    from ingest.lake import Lake
    from ingest.mixture.tokenizer.marts import with_tokenizer_estimates

    home = tmp_path / "warehouse"
    ref = tmp_path / "ref.jsonl"
    ref.write_text("".join(json.dumps({"domain": r.domain, "text": r.text, "id": r.doc_id}) + "\n"
                           for r in refs_of({d: toy["docs"][d][100:] for d in LETTERS})))
    res = CliRunner().invoke(app, ["--warehouse", str(home), "mixture", "tokenizer", "--tokenizer", str(toy["path"]),
                                   "--reference", str(ref), "--model", "toy-model", "--n-boot", "5"])
    assert res.exit_code == 0, res.output
    rows = Lake(home).read("tokenizer_mixture_estimates").to_pylist()
    assert [r["domain"] for r in sorted(rows, key=lambda r: r["domain"])] == ["a", "b", "c"]
    assert {r["model"] for r in rows} == {"toy-model"} and sum(r["estimate"] for r in rows) == pytest.approx(1)
    params = json.loads(rows[0]["params"])
    assert params["pair_slack"] is True and params["method"] == "noise" and params["max_merges"] is None
    assert params["merges_chosen"] in params["merge_grid"]
    res = CliRunner().invoke(app, ["--warehouse", str(home), "mixture", "tokenizer", "--tokenizer", str(toy["path"]),
                                   "--reference", str(ref), "--model", "toy-model", "--n-boot", "0",
                                   "--max-merges", "0", "--step-slack-only", "--method", "paper"])
    assert res.exit_code == 0, res.output
    again = Lake(home).read("tokenizer_mixture_estimates").to_pylist()
    params = json.loads(again[0]["params"])
    assert params["pair_slack"] is False and params["max_merges"] == 0 and len(again) == 3  # replaced
    assert params["method"] == "paper"
    mart = with_tokenizer_estimates(ESTIMATES_SCHEMA.empty_table(), Lake(home).read("runs"),
                                    Lake(home).read("tokenizer_mixture_estimates")).to_pylist()
    assert {r["estimator"] for r in mart} == {"bpe_merges"} and {r["model"] for r in mart} == {"toy-model"}
    assert {json.loads(r["diagnostics"])["method"] for r in mart} == {"paper"}
    assert all(r["run_id"] is None and r["n_reference"] > 0 for r in mart)
    bad = CliRunner().invoke(app, ["--warehouse", str(home), "mixture", "tokenizer", "--tokenizer",
                                   str(tmp_path / "nowhere")])
    assert isinstance(bad.exception, UserError) and "no tokenizer.json" in str(bad.exception)
    bad = CliRunner().invoke(app, ["--warehouse", str(home), "mixture", "tokenizer", "--tokenizer", str(toy["path"]),
                                   "--reference", str(ref), "--method", "magic"])
    assert isinstance(bad.exception, UserError) and "unknown bpe_merges method 'magic'" in str(bad.exception)
