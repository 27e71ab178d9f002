"""The membership-inference baselines as the LLMSurgeon authors' scripts compute them (the default), checked
against independent computations:

- scoring: one unbatched forward pass per text in float64 numpy, written from the scripts' rules (text
  encoded as `tokenizer.encode(text)` does, no start token, <= 512 tokens, < 2 tokens -> no score, Min-K%
  over max(1, int(0.2 n)), variance clamped at 1e-8, zlib level 6), not from ingest/score;
- aggregation: numpy on hand-built scores with unequal domains (median over all, `>=` for loss/zlib, `>` for
  Min-K%/Min-K%++, member counts over all members), and the `balanced` var against its own numpy oracle;
- the two conventions' rows live side by side in `text_scores` and never replace each other.
"""

from __future__ import annotations

import json
import zlib

import duckdb
import numpy as np
import pytest

from ingest.lake import Lake, make_key, text_hash
from ingest.references import import_references

from conftest import run_cli

TEXTS = ["The cat sat on the mat.", "import os\nprint(os.getcwd())", "x", "The cat " * 300,
         "def f(a, b):\n    return a + b\n" * 3]


def _oracle(model_dir, text: str, k: float = 0.2):
    """(loss, loss / zlib6, Min-K%, Min-K%++) as the authors' scripts define them, or None (< 2 tokens)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    ids = tok.encode(text)[:min(512, model.config.n_positions)]
    if len(ids) < 2:
        return None
    with torch.inference_mode():
        logits = model(input_ids=torch.tensor([ids])).logits[0, :-1].double().numpy()
    m = logits.max(-1, keepdims=True)
    logp = logits - (np.log(np.exp(logits - m).sum(-1, keepdims=True)) + m)
    lp = logp[np.arange(len(ids) - 1), ids[1:]]
    p = np.exp(logp)
    mu = (p * logp).sum(-1)
    var = np.maximum((p * logp ** 2).sum(-1) - mu ** 2, 1e-8)
    z = (lp - mu) / np.sqrt(var)
    n_k = max(1, int(len(lp) * k))
    loss = -lp.mean()
    return loss, loss / len(zlib.compress(text.encode("utf-8"), 6)), np.sort(lp)[:n_k].mean(), np.sort(z)[:n_k].mean()


def test_authors_scoring_matches_an_independent_forward_pass(mini_stack) -> None:
    from ingest.score.features import AUTHORS, score_text
    from ingest.score.logprobs import HFScorer

    scorer = HFScorer(str(mini_stack["model"]), batch_size=3, start_token=False, max_tokens=512, min_tokens=2)
    for text, s in zip(TEXTS, scorer.score(TEXTS)):
        want = _oracle(mini_stack["model"], text)
        got = score_text(text, s.logprobs, s.mu, s.sigma, 0.2, AUTHORS)
        if want is None:
            assert got.loss is None and got.mink is None, text
            continue
        assert (got.loss, got.zlib_loss, got.mink, got.minkpp) == pytest.approx(want, abs=1e-4), text


def test_both_conventions_are_stored_apart(mini_stack, home, tmp_path) -> None:
    lake = Lake(home)
    refs = tmp_path / "refs.jsonl"
    refs.write_text("".join(json.dumps({"text": d["text"][:80], "domain": d["domain"], "id": d["id"]}) + "\n"
                            for d in mini_stack["docs"][:4]))  # short: neither convention cuts them
    import_references(lake, refs, folds=2, seed=0)
    base = ["score", "--model", str(mini_stack["model"]), "--reference"]
    run_cli(*base, home=home, check=True)  # authors, the default
    run_cli(*base, "--scoring", "lmaudit", home=home, check=True)
    again = run_cli(*base, home=home, check=True)
    assert "(1/1 chunks already done)" in again.stdout  # the lmaudit run did not replace the authors' rows
    rows = lake.read("text_scores").to_pylist()
    assert len(rows) == 8 and len({r["score_id"] for r in rows}) == 8
    by = {(r["item_id"], json.loads(r["params"])["scoring"]): r for r in rows}
    for item in {i for i, _ in by}:
        a, b = by[item, "authors"], by[item, "lmaudit"]
        assert a["n_tokens"] == b["n_tokens"] - 1  # the authors' first token is context only
        assert json.loads(a["params"])["zlib_level"] == 6 and json.loads(b["params"])["zlib_level"] == 9
    bad = run_cli(*base, "--scoring", "theirs", home=home)
    assert bad.returncode == 2 and "unknown scoring convention 'theirs'" in bad.stderr


MODEL = "/w/models/m1"
# unequal (the aggregations differ), 31 in all (the median is a score); wiki has >= 10 (DUCI's calibration)
SIZES = {"books": 4, "code": 9, "web": 6, "wiki": 12}
METHOD_ROWS = ("dcpdd", "recall", "gradnorm", "jointlogit", "neighbor")  # text_method_scores, member_score given


def _numpy_duci(scores: dict[str, float], domain: dict[str, str]) -> dict[str, float]:
    """DUCI as run_duci_categories.py computes it (calibration 0.3, Youden-optimal threshold by sklearn's
    roc_curve on the sorted calibration half split), the calibration draw being the first by md5 of the id."""
    import hashlib

    from sklearn.metrics import roc_curve

    props = {}
    for dom in SIZES:
        docs = sorted((d for d in scores if domain[d] == dom), key=lambda x: (hashlib.md5(x.encode()).hexdigest(), x))
        vals = np.array([scores[d] for d in docs])
        if len(vals) < 10:
            thr, tpr, fpr = np.median(vals), 0.5, 0.5
        else:
            n_cal = max(10, int(len(vals) * 0.3))
            cal = np.sort(vals[:n_cal])
            half = len(cal) // 2
            f, t, th = roc_curve(np.r_[np.zeros(half), np.ones(len(cal) - half)], cal)
            b = int(np.argmax(t - f))
            thr, tpr, fpr = th[b], t[b], f[b]
            tpr = max(tpr, fpr + 0.01) if tpr <= fpr else tpr
        m = (vals > thr).astype(float)
        props[dom] = m.mean() if abs(tpr - fpr) < 1e-6 else np.clip((m - fpr) / (tpr - fpr), 0, 1).mean()
    return {d: p / sum(props.values()) for d, p in props.items()}


def _numpy_estimates(scores: dict[str, float], domain: dict[str, str], ge: bool, balanced: bool):
    docs = sorted(scores)
    if balanced:
        import hashlib

        n = min(SIZES.values())
        docs = [d for dom in SIZES for d in sorted((x for x in docs if domain[x] == dom),
                                                    key=lambda x: (hashlib.md5(x.encode()).hexdigest(), x))[:n]]
    vals = np.array([scores[d] for d in docs])
    thr = np.median(vals)
    member = {d: (scores[d] >= thr) if ge else (scores[d] > thr) for d in docs}
    counts = {dom: sum(member[d] for d in docs if domain[d] == dom) for dom in SIZES}
    return {dom: c / sum(counts.values()) for dom, c in counts.items()}


@pytest.mark.slow
@pytest.mark.parametrize("aggregation", ["authors", "balanced"])
def test_aggregation_against_numpy(home, tmp_path, aggregation) -> None:
    lake = Lake(home)
    refs = tmp_path / "refs.jsonl"
    refs.write_text("".join(json.dumps({"text": f"{d} text {i} " * 3, "domain": d, "id": f"{d}-{i}"}) + "\n"
                            for d, n in SIZES.items() for i in range(n)))
    import_references(lake, refs, folds=2, seed=0)
    ref_rows = lake.read("reference_docs").to_pylist()
    rng = np.random.default_rng(3)
    # rounded losses so that ties at the median occur (where >= and > differ)
    loss = {r["ref_doc_id"]: round(float(rng.uniform(1, 4)) + (0.6 if r["domain"] == "code" else 0.0), 1)
            for r in ref_rows}
    mink = {k: -round(v * 1.2, 1) for k, v in loss.items()}
    lake.write("text_scores", "hand", [{
        "score_id": make_key(MODEL, r["ref_doc_id"], "authors"), "model": MODEL, "item_id": r["ref_doc_id"],
        "item_kind": "reference", "text_hash": text_hash(r["text"]), "n_tokens": 10, "truncated": False,
        "loss": loss[r["ref_doc_id"]], "zlib_loss": loss[r["ref_doc_id"]] / 40, "mink": mink[r["ref_doc_id"]],
        "minkpp": None, "ref_model": None, "ref_loss": None, "token_logprobs": [],
        "params": json.dumps({"scoring": "authors"}),
    } for r in ref_rows])
    method_scores = {m: {k: round(float(rng.normal(-v if i % 2 else v, 0.5)), 1) for k, v in loss.items()}
                     for i, m in enumerate(METHOD_ROWS)}
    lake.write("text_method_scores", "hand", [{
        "method_score_id": make_key(MODEL, r["ref_doc_id"], m), "model": MODEL, "item_id": r["ref_doc_id"],
        "item_kind": "reference", "text_hash": text_hash(r["text"]), "method": m, "scoring": "authors",
        "n_tokens": 10, "raw_score": None, "member_score": method_scores[m][r["ref_doc_id"]], "params": "{}",
    } for r in ref_rows for m in METHOD_ROWS])
    run_cli("build", "-s", "+fct_mixture_mia_estimates", "--vars",
            json.dumps({"mixture_mia_aggregation": aggregation}), home=home, check=True)
    domain = {r["ref_doc_id"]: r["domain"] for r in ref_rows}
    balanced = aggregation == "balanced"
    expected = {
        "mia_loss": _numpy_estimates({k: -v for k, v in loss.items()}, domain, not balanced, balanced),
        "mia_zlib": _numpy_estimates({k: -v / 40 for k, v in loss.items()}, domain, not balanced, balanced),
        "mia_mink": _numpy_estimates(mink, domain, False, balanced),
        # DC-PDD, ReCaLL, Neighbor: their scripts' >= (DC-PDD: a member when its own score <= the median);
        # GradNorm and Joint-Logit: no script, the loss script's >=
        **{f"mia_{m}": _numpy_estimates(method_scores[m], domain, not balanced, balanced) for m in METHOD_ROWS},
        "mia_duci": _numpy_duci({k: -v for k, v in loss.items()}, domain),  # on the loss scores, any aggregation
    }
    with duckdb.connect(str(home / "lmaudit.duckdb"), read_only=True) as con:
        got = con.execute("select estimator, domain, estimate, aggregation, scoring "
                          "from fct_mixture_mia_estimates").fetchall()
    assert {e for e, *_ in got} == set(expected)
    for est, dom, val, agg, scoring in got:
        assert (agg, scoring) == ("duci" if est == "mia_duci" else aggregation, "authors")
        assert val == pytest.approx(expected[est][dom], abs=1e-4), (est, dom)
    if not balanced:  # the rule matters here: with >= the loss estimate differs from a strict >
        strict = _numpy_estimates({k: -v for k, v in loss.items()}, domain, False, False)
        assert strict != expected["mia_loss"]
