"""LLMSurgeon's MIA baselines as rows of fct_mixture_estimates, scored by fct_mixture_evaluation like every
other estimator. Oracle: the aggregation (balanced sample, pooled median threshold, share above, normalised)
and the overlap accuracy recomputed with numpy from the hand-built scores."""

from __future__ import annotations

import json

import duckdb
import numpy as np
import pytest

from ingest.lake import Lake, make_key, text_hash
from ingest.references import import_references

from conftest import run_cli

pytestmark = pytest.mark.slow

MODEL = "/w/models/m1"  # matches the documented model "m1" by its last path segment
DOMAINS = ("books", "code", "web")
TRUTH = {"books": 0.2, "code": 0.3, "web": 0.5}


def test_mia_estimates_are_evaluated_beside_the_others(home, tmp_path) -> None:
    lake = Lake(home)
    rng = np.random.default_rng(7)
    refs = tmp_path / "refs.jsonl"
    docs = [{"text": f"{d} document number {i} " * 3, "domain": d, "id": f"{d}-{i}"}
            for d in DOMAINS for i in range(6)]
    refs.write_text("".join(json.dumps(x) + "\n" for x in docs))
    import_references(lake, refs, folds=2, seed=0)
    ref_rows = lake.read("reference_docs").to_pylist()
    losses = {r["ref_doc_id"]: float(rng.uniform(1, 4)) + (0.0 if r["domain"] == "web" else 0.7)
              for r in ref_rows}
    mink = {k: -v * 1.3 + float(rng.normal(0, 0.1)) for k, v in losses.items()}
    lake.write("text_scores", "hand", [{
        "score_id": make_key(MODEL, r["ref_doc_id"]), "model": MODEL, "item_id": r["ref_doc_id"],
        "item_kind": "reference", "text_hash": text_hash(r["text"]), "n_tokens": 10, "truncated": False,
        "loss": losses[r["ref_doc_id"]], "zlib_loss": losses[r["ref_doc_id"]] / 30, "mink": mink[r["ref_doc_id"]],
        "minkpp": None, "ref_model": None, "ref_loss": None, "token_logprobs": [], "params": "{}",
    } for r in ref_rows])
    lake.write("mixtures_documented", "hand", [
        {"mixture_id": make_key("m1", d), "model": "m1", "domain": d, "weight": w, "source": "hand"}
        for d, w in TRUTH.items()])
    run_cli("build", "-s", "+fct_mixture_evaluation", home=home, check=True)

    by_domain = {r["ref_doc_id"]: r["domain"] for r in ref_rows}
    expected = {}
    for est, score in (("mia_loss", {k: -v for k, v in losses.items()}),
                       ("mia_zlib", {k: -v / 30 for k, v in losses.items()}), ("mia_mink", mink)):
        vals = np.array(list(score.values()))
        thr = np.median(vals)  # 6 documents per domain: the balanced sample is every document
        share = {d: np.mean([score[k] > thr for k in score if by_domain[k] == d]) for d in DOMAINS}
        total = sum(share.values())
        expected[est] = {d: share[d] / total for d in DOMAINS}
    # DUCI (the authors' run_duci_categories.py on the loss): under 10 documents a domain is thresholded at
    # its own median and its share above it is not debiased (TPR = FPR); shares normalised
    duci = {d: np.mean([-losses[k] > np.median([-losses[j] for j in losses if by_domain[j] == d])
                        for k in losses if by_domain[k] == d]) for d in DOMAINS}
    expected["mia_duci"] = {d: duci[d] / sum(duci.values()) for d in DOMAINS}

    with duckdb.connect(str(home / "lmaudit.duckdb"), read_only=True) as con:
        got = con.execute("select estimator, domain, estimate, run_id, classifier_id, n_reference "
                          "from fct_mixture_estimates where estimator like 'mia%'").fetchall()
        ev = dict(con.execute("select estimator, overlap_accuracy from fct_mixture_evaluation").fetchall())
    assert {e for e, *_ in got} == set(expected)  # no mia_minkpp / mia_ref: those scores are NULL
    for est, dom, val, run, clf, n_ref in got:
        assert run is None and clf is None and n_ref == 18
        assert val == pytest.approx(expected[est][dom], abs=1e-12), (est, dom)
    for est, shares in expected.items():
        oa = 1 - 0.5 * sum(abs(shares[d] - TRUTH[d]) for d in DOMAINS)
        assert ev[est] == pytest.approx(oa, abs=1e-12), est
