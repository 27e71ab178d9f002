"""The Table-2 baselines of `lmaudit score --methods` (DC-PDD, ReCaLL, GradNorm, Joint-Logit, Neighbor), checked per
text against independent computations on the sandbox-sized GPT-2 of `mini_stack`:

- one unbatched float64 forward pass per text in numpy (log-softmax by hand), written from the authors'
  scripts' rules (run_dcpdd_threshold.py, run_recall_threshold.py) and the papers, not from ingest/score:
  DC-PDD's frequencies counted here from the reference texts, ReCaLL's prefix drawn here by the stated rule;
- GradNorm's gradients from torch.autograd.grad on a float64 copy of the model with the loss written by hand;
- plus resuming, a changed ReCaLL prefix replacing only ReCaLL's rows, frequencies from a registered
  corpus's unigram table, and bad input as one line with exit status 2.
"""

from __future__ import annotations

import copy
import hashlib
import json
import random

import numpy as np
import pytest

from ingest.lake import Lake
from ingest.references import import_references

from conftest import run_cli

METHODS = "dcpdd,recall,gradnorm,jointlogit,neighbor"


@pytest.fixture(scope="module")
def scored(mini_stack, tmp_path_factory):
    """Six short reference documents (one of a single token: no scores) scored with every method."""
    home = tmp_path_factory.mktemp("mia_baselines") / "warehouse"
    lake = Lake(home)
    lake.init()
    docs = [{"text": d["text"][:120], "domain": d["domain"], "id": d["id"]} for d in mini_stack["docs"][:4]]
    docs += [{"text": "The cat sat on the mat. " * 2, "domain": "prose", "id": "cat"},
             {"text": "x", "domain": "prose", "id": "x"}]
    refs = home.parent / "refs.jsonl"
    refs.write_text("".join(json.dumps(d) + "\n" for d in docs))
    import_references(lake, refs, folds=2, seed=0)
    base = ["score", "--model", str(mini_stack["model"]), "--reference", "--chunk-size", "4"]
    first = _score(lake, mini_stack["model"], METHODS)  # in-process: a CLI run costs seconds of imports
    return {"home": home, "lake": lake, "base": base, "first": first, "model": mini_stack["model"],
            "refs": {r["ref_doc_id"]: r["text"] for r in lake.read("reference_docs").to_pylist()}}


def _score(lake, model, methods, prefix_file=None, neighbor_model=None):
    from ingest.score.method_run import method_job, parse_methods, score_methods
    from ingest.score.run import reference_items

    job = method_job(lake, str(model), parse_methods(methods), recall_prefix_file=prefix_file,
                     neighbor_model=neighbor_model)
    return score_methods(lake, job, reference_items(lake), "reference", chunk_size=4)


def _model(model_dir):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(0)
    return AutoTokenizer.from_pretrained(model_dir), AutoModelForCausalLM.from_pretrained(model_dir).eval()


def _logp(model, ids):
    """float64 log-softmax of the next-token logits at every position but the last."""
    import torch

    with torch.inference_mode():
        z = model(input_ids=torch.tensor([ids])).logits[0, :-1].double().numpy()
    m = z.max(-1, keepdims=True)
    return z - (np.log(np.exp(z - m).sum(-1, keepdims=True)) + m)


def _oracle(tok, model, texts: dict[str, str]):
    """{(method, ref_doc_id): raw score or None} computed from the scripts' and papers' rules."""
    import torch

    limit = min(512, model.config.n_positions)
    # DC-PDD frequencies: every reference text, first 512 tokens, add-one over len(tokenizer)
    counts = np.zeros(len(tok))
    for t in texts.values():
        for i in tok.encode(t)[:512]:
            counts[i] += 1
    freq = (counts + 1) / (counts.sum() + len(tok))
    # ReCaLL prefix: 12 draws (with replacement: fewer than 12 texts) with random.Random(0) from the texts
    # sorted by id, joined by a blank line
    pool = [texts[k] for k in sorted(texts)]
    rng = random.Random(0)
    prefix = "\n\n".join(pool[rng.randrange(len(pool))] for _ in range(12))
    m64 = copy.deepcopy(model).double()
    fill = sorted({w for t in texts.values() for w in t.split()})  # under 5,000 words: every text's words
    out = {}
    for doc, text in texts.items():
        ids = tok.encode(text)[:limit]
        if len(ids) < 2:
            for m in ("dcpdd", "recall", "gradnorm", "jointlogit", "neighbor"):
                out[m, doc] = None
            continue
        lp = _logp(model, ids)[np.arange(len(ids) - 1), ids[1:]]
        firsts = sorted({t: i for i, t in reversed(list(enumerate(ids[1:])))}.values())
        ce = [min(np.exp(lp[i]) * np.log(1 / freq[ids[1 + i]]), 0.01) for i in firsts]
        out["dcpdd", doc] = -np.mean(ce)
        pre = tok.encode(prefix)[:limit - len(ids)]
        seq = pre + ids
        lpc = _logp(model, seq)
        cond = [lpc[j - 1, seq[j]] for j in range(max(len(pre), 1), len(seq))]
        out["recall", doc] = np.mean(cond) / np.mean(lp)
        s = lp.sum()
        out["jointlogit", doc] = s - np.log(1 - np.exp(s))
        x = torch.tensor([ids])
        logits = m64(input_ids=x).logits[0, :-1]
        nll = -(logits - torch.logsumexp(logits, -1, keepdim=True))[torch.arange(len(ids) - 1), x[0, 1:]].mean()
        params = list(m64.parameters())
        grads = torch.autograd.grad(nll, params)
        out["gradnorm", doc] = float(np.mean([float(g.norm(2)) for g in grads]))
        # Neighbor: 10 neighbours, each replacing max(1, round(0.3 n)) words in ceil(./2) spans of 2 words at
        # random starts with random words of the pooled texts; the generator seeded by "0:" + md5 of the text
        words = text.split()
        rng = random.Random(f"0:{hashlib.md5(text.encode()).hexdigest()}")
        lls = []
        for _ in range(10):
            w = list(words)
            for _ in range(max(1, int(np.ceil(max(1, round(0.3 * len(w))) / 2)))):
                start = rng.randrange(0, len(w))
                for i in range(start, min(len(w), start + 2)):
                    w[i] = fill[rng.randrange(len(fill))]
            pid = tok.encode(" ".join(w))[:limit]
            if len(pid) >= 2:
                lls.append(_logp(model, pid)[np.arange(len(pid) - 1), pid[1:]].mean())
        out["neighbor", doc] = lp.mean() - np.mean(lls) if len(words) >= 2 and lls else None
    return out


def test_each_method_matches_an_independent_computation(scored, mini_stack) -> None:
    tok, model = _model(mini_stack["model"])
    want = _oracle(tok, model, scored["refs"])
    rows = scored["lake"].read("text_method_scores").to_pylist()
    assert len(rows) == 5 * 6 and len({r["method_score_id"] for r in rows}) == 30
    recall_used_prefix = False
    for r in rows:
        w = want[r["method"], r["item_id"]]
        if w is None:
            assert r["raw_score"] is None and r["member_score"] is None, r
            continue
        assert r["raw_score"] == pytest.approx(w, abs=1e-4), (r["method"], r["item_id"])
        sign = -1 if r["method"] in ("dcpdd", "gradnorm") else 1  # member_score: higher = more like training
        assert r["member_score"] == pytest.approx(sign * w, abs=1e-4)
        assert r["scoring"] == "authors" and json.loads(r["params"])["max_tokens"] == 512
        recall_used_prefix |= r["method"] == "recall" and abs(r["raw_score"] - 1) > 1e-3
    assert recall_used_prefix  # short texts leave the prefix room: the ratio is not trivially 1


def test_resuming_and_a_new_recall_prefix(scored, mini_stack, tmp_path) -> None:
    again = _score(scored["lake"], mini_stack["model"], METHODS)
    assert (again.n_partitions, again.n_skipped) == (10, 10)
    before = {(r["method"], r["item_id"]): r for r in scored["lake"].read("text_method_scores").to_pylist()}
    prefix = tmp_path / "nonmembers.txt"
    prefix.write_text("Completely unrelated words about ships and weather. " * 3)
    _score(scored["lake"], mini_stack["model"], "recall", str(prefix))
    after = {(r["method"], r["item_id"]): r for r in scored["lake"].read("text_method_scores").to_pylist()}
    assert after.keys() == before.keys()  # the old prefix's rows were replaced, not kept beside the new
    changed = [k for k in after if after[k]["raw_score"] != before[k]["raw_score"]]
    assert changed and {m for m, _ in changed} == {"recall"}
    assert all(json.loads(after[k]["params"])["prefix_source"] == "file:nonmembers.txt" for k in changed)


def test_neighbours_from_a_masked_lm(scored, mini_stack, tmp_path) -> None:
    """--neighbor-model: the same amount of text masked, each masked word filled with the masked LM's most
    likely token that is neither special nor the word itself; recomputed here with the masked LM's own
    forward pass."""
    import torch
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    from ingest.sandbox.masked_lm import build_masked_lm

    mlm_dir = build_masked_lm([d["text"] for d in mini_stack["docs"]], tmp_path / "mlm", vocab_size=300, steps=20)
    _score(scored["lake"], mini_stack["model"], "neighbor", neighbor_model=str(mlm_dir))
    rows = {r["item_id"]: r for r in scored["lake"].read("text_method_scores").to_pylist() if r["method"] == "neighbor"}
    assert len(rows) == 6 and all(json.loads(r["params"])["fill"] == "masked LM" for r in rows.values())
    mtok, mlm = AutoTokenizer.from_pretrained(mlm_dir), AutoModelForMaskedLM.from_pretrained(mlm_dir).eval()
    tok, model = _model(mini_stack["model"])
    special = set(mtok.all_special_ids)
    for doc, text in scored["refs"].items():
        ids = tok.encode(text)[:128]
        words = text.split()
        if len(ids) < 2 or len(words) < 2:
            assert rows[doc]["raw_score"] is None
            continue
        rng = random.Random(f"0:{hashlib.md5(text.encode()).hexdigest()}")
        lls = []
        for _ in range(10):
            pos = set()
            for _ in range(max(1, int(np.ceil(max(1, round(0.3 * len(words))) / 2)))):
                start = rng.randrange(0, len(words))
                pos |= set(range(start, min(len(words), start + 2)))
            masked = " ".join("[MASK]" if i in pos else w for i, w in enumerate(words))
            mids = mtok(masked, truncation=True, max_length=128)["input_ids"]
            with torch.inference_mode():
                logits = mlm(input_ids=torch.tensor([mids])).logits[0].double().numpy()
            new = list(words)
            for p, at in zip(sorted(pos), [j for j, t in enumerate(mids) if t == mtok.mask_token_id]):
                own = mtok(words[p], add_special_tokens=False)["input_ids"]
                banned = special | (set(own) if len(own) == 1 else set())
                best = max((v, k) for k, v in enumerate(logits[at]) if k not in banned)[1]
                new[p] = mtok.convert_ids_to_tokens(best)
            pid = tok.encode(" ".join(new))[:128]
            lls.append(_logp(model, pid)[np.arange(len(pid) - 1), pid[1:]].mean())
        lp = _logp(model, ids)[np.arange(len(ids) - 1), ids[1:]]
        assert rows[doc]["raw_score"] == pytest.approx(lp.mean() - np.mean(lls), abs=1e-4), doc


@pytest.mark.slow  # one CLI run end to end (imports torch in a subprocess)
def test_dcpdd_frequencies_from_a_registered_corpus(mini_stack, tmp_path) -> None:
    from ingest.corpora import register_corpus

    home = tmp_path / "warehouse"
    lake = Lake(home)
    lake.init()
    refs = tmp_path / "refs.jsonl"
    refs.write_text("".join(json.dumps({"text": mini_stack["docs"][i]["text"][:120], "domain": "code", "id": f"d{i}"})
                            + "\n" for i in range(2)))
    import_references(lake, refs, folds=2, seed=0)
    register_corpus(lake, "mini", [mini_stack["index"]])
    run_cli("score", "--model", str(mini_stack["model"]), "--reference", "--methods", "dcpdd",
            "--dcpdd-corpus", "mini", home=home, check=True)
    text = mini_stack["docs"][0]["text"][:120]
    doc = next(r["ref_doc_id"] for r in lake.read("reference_docs").to_pylist() if r["text"] == text)
    row = next(r for r in lake.read("text_method_scores").to_pylist() if r["item_id"] == doc)
    tok, model = _model(mini_stack["model"])
    freq = np.exp(np.load(mini_stack["index"] / "lmaudit-logprob.npy"))  # the index's unigram table
    ids = tok.encode(text)
    lp = _logp(model, ids)[np.arange(len(ids) - 1), ids[1:]]
    firsts = sorted({t: i for i, t in reversed(list(enumerate(ids[1:])))}.values())
    want = -np.mean([min(np.exp(lp[i]) * -np.log(freq[ids[1 + i]]), 0.01) for i in firsts])
    assert row["raw_score"] == pytest.approx(want, abs=1e-4)
    assert json.loads(row["params"])["freq_source"] == "corpus:mini"


@pytest.mark.parametrize("args, message", [
    (["--methods", "dcpdd,bogus"], "unknown MIA method 'bogus'"),
    (["--recall-prefix", "p.txt"], "--recall-prefix is for ReCaLL"),
    (["--methods", "gradnorm", "--scoring", "lmaudit"], "authors' convention only"),
    (["--methods", "neighbor", "--neighbor-model", "/nonexistent/mlm"], "is not a masked language model"),
])
def test_bad_input_is_one_line(scored, args, message) -> None:
    n = len(scored["lake"].read("text_method_scores"))
    r = run_cli(*scored["base"], *args, home=scored["home"])
    assert r.returncode == 2 and message in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert len(scored["lake"].read("text_method_scores")) == n


@pytest.mark.parametrize("kwargs, message", [
    ({"dcpdd_corpus": "nope"}, "corpus 'nope' is not registered"),
    ({"recall_prefix_file": "/nonexistent/p.txt"}, "cannot read --recall-prefix"),
    ({"neighbor_model": "MODEL"}, "is not a masked language model"),  # a causal LM
    ({"neighbor_model": "/nonexistent/mlm"}, "is not a masked language model"),
])
def test_bad_method_input_is_refused_before_scoring(scored, kwargs, message) -> None:
    """In-process (the CLI turns a UserError into one line, exit 2, as the cases above show)."""
    from ingest.errors import UserError
    from ingest.score.method_run import method_job

    kwargs = {k: str(scored["model"]) if v == "MODEL" else v for k, v in kwargs.items()}
    with pytest.raises(UserError, match=message) as e:
        method_job(scored["lake"], str(scored["model"]), ("dcpdd", "recall", "neighbor"), **kwargs)
    assert "\n" not in str(e.value)
