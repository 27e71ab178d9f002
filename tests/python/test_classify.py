"""Domain classifiers on a small real corpus built from local text: stdlib Python source (code), pydoc topics
(documentation), license files of the installed packages (boilerplate).

Checked: cross-fitting (every reference posterior comes from a model that never saw the document, both
structurally with a spy backend and behaviourally with a planted mislabelled document), temperature
calibration fitted on the calibration fold lowers the NLL on the other (held-out) folds, save/reload gives
identical posteriors, scoring a run, re-training replaces, and bad inputs are one-line errors.
"""

from __future__ import annotations

import importlib.metadata as md
import json
import os
import random
from pathlib import Path

import numpy as np
import pytest

from ingest.classify import (Backend, load_classifier, make_backend, nll, register_backend, score_runs, softmax,
                             train_classifier)
from ingest.classify.backends import CLASSIFIER_BACKENDS
from ingest.errors import UserError
from ingest.importers.generations import import_generations
from ingest.lake import Lake
from ingest.references import import_references

from conftest import run_cli

N_REF = 30  # reference documents per domain; the rest of each domain's snippets become "generations"
PLANT = ("def planted_function(zqxv_alpha, zqxv_beta):\n    zqxv_gamma = zqxv_alpha + zqxv_beta\n"
         "    return zqxv_gamma  # zqxv zqxv zqxv\n")


def local_corpus(per_domain: int = 40, chars: int = 300, seed: int = 0) -> dict[str, list[str]]:
    """Snippets of `chars` characters at seeded offsets, per domain (deterministic on one installation)."""
    rng = random.Random(seed)

    def snip(t: str) -> str:
        start = rng.randrange(0, max(1, len(t) - chars))
        return t[start:start + chars]

    code = []
    for p in sorted(Path(os.__file__).parent.glob("*.py")):
        t = p.read_text(encoding="utf-8", errors="replace")
        if len(t) > 3000:
            code.append(snip(t))
        if len(code) >= per_domain:
            break
    import pydoc_data.topics as topics

    docs = [snip(v) for _, v in sorted(topics.topics.items()) if len(v) > 1000][:per_domain]
    licenses = set()
    for dist in md.distributions():
        for f in dist.files or []:
            if f.name.upper().startswith(("LICENSE", "LICENCE", "COPYING")):
                try:
                    t = Path(f.locate()).read_text(encoding="utf-8")
                except (OSError, UnicodeDecodeError):
                    continue
                if len(t) > 1000:
                    licenses.add(t)
    boiler = [snip(t) for t in sorted(licenses)][:per_domain]
    out = {"code": code, "documentation": docs, "boilerplate": boiler}
    assert all(len(v) == per_domain for v in out.values()), {k: len(v) for k, v in out.items()}
    return out


@pytest.fixture(scope="module")
def corpus() -> dict[str, list[str]]:
    return local_corpus()


def write_refs(path: Path, corpus: dict[str, list[str]], n: int = N_REF, plant: bool = True) -> Path:
    rows = [{"id": f"{d}-{i}", "domain": d, "text": t} for d, texts in corpus.items() for i, t in enumerate(texts[:n])]
    if plant:  # code-looking text labelled documentation, with tokens found nowhere else
        rows.append({"id": "planted", "domain": "documentation", "text": PLANT})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def write_generations(path: Path, corpus: dict[str, list[str]], n: int = N_REF) -> tuple[Path, list[str], list[str]]:
    texts, labels = [], []
    for d, ts in corpus.items():
        texts += ts[n:]
        labels += [d] * len(ts[n:])
    path.write_text("".join(json.dumps({"text": t, "sample_idx": i}) + "\n" for i, t in enumerate(texts + [""])),
                    encoding="utf-8")
    return path, texts, labels


@pytest.fixture(scope="module")
def trained(tmp_path_factory, corpus):
    """A warehouse with references (3 folds), a tfidf classifier trained by the CLI, and a scored run."""
    root = tmp_path_factory.mktemp("classify")
    home = root / "warehouse"
    lake = Lake(home)
    lake.init()
    import_references(lake, write_refs(root / "refs.jsonl", corpus), folds=3, seed=0)
    proc = run_cli("classify", "train", "--backend", "tfidf", "--domains", "code,documentation",
                   "--domains", "boilerplate", "--name", "tf", home=home, check=True)
    gens, texts, labels = write_generations(root / "gens.jsonl", corpus)
    import_generations(lake, gens, run_id="r1", model="m", setting="unconditional")
    score = run_cli("classify", "score", "--run", "r1", home=home, check=True)
    return {"home": home, "lake": lake, "train_out": proc.stdout, "score_out": score.stdout, "texts": texts,
            "labels": labels}


def outputs(lake: Lake, kind: str) -> list[dict]:
    return [r for r in lake.read("classifier_outputs").to_pylist() if r["item_kind"] == kind]


def test_train_writes_the_classifier_and_cross_fitted_reference_posteriors(trained) -> None:
    lake = trained["lake"]
    assert "trained classifier 'tf' (tfidf, 3 domains, 91 reference documents, 3-fold" in trained["train_out"]
    (clf,) = lake.read("classifiers").to_pylist()
    assert clf["backend"] == "tfidf" and clf["domains"] == ["code", "documentation", "boilerplate"]
    params = json.loads(clf["params"])
    assert params["folds"] == 3 and params["calibration_fold"] == 0 and params["n_reference"] == 91
    assert params["support"] == {"code": 30, "documentation": 31, "boilerplate": 30}
    assert clf["temperature"] == pytest.approx(params["calibration"]["ts"]["temperature"])
    refs = {r["ref_doc_id"]: r for r in lake.read("reference_docs").to_pylist()}
    out = outputs(lake, "reference")
    assert len(out) == 91 and {o["item_id"] for o in out} == set(refs)
    for o in out:
        assert o["fold"] == refs[o["item_id"]]["fold"]
        assert sum(o["probs"]) == pytest.approx(1.0, abs=1e-9) and len(o["probs"]) == 3
    assert params["oof_accuracy"] > 0.75
    assert (Path(trained["home"]) / "classifiers" / "tf" / "model.joblib").exists()


def test_temperature_fitted_on_the_calibration_fold_lowers_held_out_nll(trained) -> None:
    lake = trained["lake"]
    (clf,) = lake.read("classifiers").to_pylist()
    t = clf["temperature"]
    assert t != pytest.approx(1.0, abs=0.05)
    cal = json.loads(clf["params"])["calibration"]
    held = cal["nll"]["heldout_folds"]
    assert held["ts"] < held["uncalibrated"] and cal["fallback"] is None
    # independently from the stored posteriors: undo the temperature (p_raw ~ p^T) on the folds that were
    # NOT used to fit it and compare the NLL with and without it
    refs = {r["ref_doc_id"]: r for r in lake.read("reference_docs").to_pylist()}
    index = {d: i for i, d in enumerate(clf["domains"])}
    out = [o for o in outputs(lake, "reference") if o["fold"] != 0]
    p = np.array([o["probs"] for o in out])
    y = np.array([index[refs[o["item_id"]]["domain"]] for o in out])
    raw = softmax(t * np.log(p))
    assert nll(p, y) < nll(raw, y)
    assert nll(p, y) == pytest.approx(held["ts"], rel=1e-6)
    assert nll(raw, y) == pytest.approx(held["uncalibrated"], rel=1e-6)


def test_a_reference_posterior_comes_from_a_model_that_did_not_see_the_document(trained, corpus) -> None:
    """Behaviour: the planted code-looking document labelled documentation is memorised by the final model
    (it trained on it) but its cross-fitted posterior, from the fold model that did not, calls it code."""
    lake = trained["lake"]
    planted = next(r for r in lake.read("reference_docs").to_pylist() if r["doc_id"] == "planted")
    (o,) = [o for o in outputs(lake, "reference") if o["item_id"] == planted["ref_doc_id"]]
    clf = load_classifier(lake, "tf")
    final = clf.posteriors([PLANT])[0]
    doc = clf.domains.index("documentation")
    assert np.argmax(o["probs"]) == clf.domains.index("code")
    assert final[doc] > o["probs"][doc] + 0.2, (final, o["probs"])


class SpyBackend(Backend):
    """Refuses to score any text it trained on; records its fits."""

    name = "spy"
    fits: list[set] = []

    def __init__(self, n_domains: int, seed: int = 0):
        super().__init__(n_domains, seed)
        self.inner = make_backend("tfidf", n_domains, seed=seed, max_features=2000)

    def fit(self, texts, labels, on_step=None):
        self.seen = set(texts)
        SpyBackend.fits.append(self.seen)
        self.inner.fit(texts, labels)
        return self

    def logits(self, texts, on_step=None):
        leaked = [t for t in texts if t in self.seen]
        assert not leaked, f"scored {len(leaked)} document(s) this model trained on"
        return self.inner.logits(texts)

    def save(self, path):
        self.inner.save(path)

    @classmethod
    def load(cls, path):  # pragma: no cover - not scored
        raise NotImplementedError


def test_cross_fitting_never_scores_a_document_with_a_model_that_trained_on_it(tmp_path: Path, corpus) -> None:
    register_backend(SpyBackend)
    SpyBackend.fits.clear()
    try:
        lake = Lake(tmp_path / "w")
        import_references(lake, write_refs(tmp_path / "refs.jsonl", corpus, n=12, plant=False), folds=4)
        s = train_classifier(lake, backend="spy", name="spy", progress=False)
    finally:
        CLASSIFIER_BACKENDS.remove("spy")
    texts = {r["text"] for r in lake.read("reference_docs").to_pylist()}
    assert len(SpyBackend.fits) == 5 and s.folds == 4  # 4 fold models + the final model
    assert SpyBackend.fits[-1] == texts  # the final model trains on everything ...
    for seen in SpyBackend.fits[:-1]:  # ... each fold model on three quarters
        assert len(seen) == 27
    assert len(outputs(lake, "reference")) == 36


def test_save_reload_and_score_a_run(trained) -> None:
    lake = trained["lake"]
    assert "scored run 'r1' with 'tf': 30 generations" in trained["score_out"]
    assert "skipped 1 empty generations" in trained["score_out"]
    gens = {g["generation_id"]: g["text"] for g in lake.read("generations").to_pylist()}
    out = outputs(lake, "generation")
    assert len(out) == 30 and all(o["fold"] is None for o in out)
    clf = load_classifier(lake)  # the only classifier; reloaded from disk with its calibration
    texts = [gens[o["item_id"]] for o in out]
    again = clf.posteriors(texts)
    np.testing.assert_allclose(np.array([o["probs"] for o in out]), again, atol=1e-12)
    truth = {t: d for t, d in zip(trained["texts"], trained["labels"])}
    acc = np.mean([clf.domains[int(np.argmax(p))] == truth[t] for t, p in zip(texts, again)])
    assert acc >= 0.8


def test_retraining_replaces_the_classifier_and_drops_its_generation_scores(trained, tmp_path: Path) -> None:
    # on a copy, so the module's warehouse stays as the other tests expect
    import shutil

    home = tmp_path / "w"
    shutil.copytree(trained["home"], home)
    lake = Lake(home)
    assert outputs(lake, "generation")
    s = train_classifier(lake, backend="tfidf", domains=["code", "documentation", "boilerplate"], name="tf",
                         calibration="bcts", progress=False)
    assert s.replaced
    assert outputs(lake, "generation") == []
    assert len(outputs(lake, "reference")) == 91 and lake.read("classifiers").num_rows == 1
    cal = json.loads(lake.read("classifiers").to_pylist()[0]["params"])["calibration"]
    assert cal["kind"] == "bcts" and cal["applied"]["kind"] == "bcts"
    score_runs(lake, ["r1"], progress=False)
    assert len(outputs(lake, "generation")) == 30


def test_bad_inputs_are_one_line_errors(trained, tmp_path: Path) -> None:
    lake = trained["lake"]
    with pytest.raises(UserError, match=r"domain\(s\) \['web'\] have no reference documents"):
        train_classifier(lake, domains=["code", "web"], progress=False)
    with pytest.raises(UserError, match="at least 2 domains"):
        train_classifier(lake, domains=["code"], progress=False)
    with pytest.raises(UserError, match="unknown classifier backend 'bert'"):
        train_classifier(lake, backend="bert", progress=False)
    with pytest.raises(UserError, match=r"has no parameter\(s\) \['depth'\]"):
        train_classifier(lake, params={"depth": 3}, progress=False)
    with pytest.raises(UserError, match="--calibration-fold 7 is not one of the folds"):
        train_classifier(lake, calibration_fold=7, progress=False)
    with pytest.raises(UserError, match="unknown run 'nope'"):
        score_runs(lake, ["nope"], progress=False)
    with pytest.raises(UserError, match="unknown classifier 'other'"):
        score_runs(lake, ["r1"], classifier="other", progress=False)
    empty = Lake(tmp_path / "empty")
    with pytest.raises(UserError, match="no reference documents in the warehouse"):
        train_classifier(empty, progress=False)
    with pytest.raises(UserError, match="no classifier in the warehouse"):
        score_runs(empty, ["r1"], progress=False)
    # a registered run without generations
    empty.write("runs", "r0", [{"run_id": "r0", "model": "m", "setting": "unconditional"}])
    empty.write("classifiers", "c", [{"classifier_id": "x", "name": "c", "backend": "tfidf", "domains": ["a", "b"]}])
    with pytest.raises(UserError, match="run 'r0' has no generations"):
        score_runs(empty, ["r0"], progress=False)
    empty.write("generations", "r0", [{"generation_id": "g", "run_id": "r0", "sample_idx": 0, "text": "x"}])
    with pytest.raises(UserError, match="files are missing"):
        score_runs(empty, ["r0"], progress=False)
    proc = run_cli("classify", "score", "--run", "nope", home=trained["home"])
    assert proc.returncode == 2 and proc.stderr.strip().startswith("error: unknown run 'nope'")
    assert len(proc.stderr.strip().splitlines()) == 1
    proc = run_cli("classify", "train", "--epochs", "2", home=trained["home"])
    assert proc.returncode == 2 and "applies to --backend transformer only" in proc.stderr


def test_posteriors_are_current_only_for_the_text_they_were_computed_from(trained, tmp_path) -> None:
    """Each posterior carries the hash of its text; a run re-imported with other texts needs scoring again."""
    from ingest.classify.score import is_scored, score_runs
    from ingest.lake import text_hash

    lake = trained["lake"]
    gens = {g["generation_id"]: g["text"] for g in lake.read("generations").to_pylist() if g["run_id"] == "r1"}
    for o in outputs(lake, "generation"):
        if o["item_id"] in gens:
            assert o["text_hash"] == text_hash(gens[o["item_id"]])
    assert is_scored(lake, "tf", "r1")
    same, changed = tmp_path / "same.jsonl", tmp_path / "changed.jsonl"
    same.write_text("".join(json.dumps({"text": t, "sample_idx": i}) + "\n" for i, t in enumerate(trained["texts"])),
                    encoding="utf-8")
    changed.write_text("".join(json.dumps({"text": f"{t} and a new ending", "sample_idx": i}) + "\n"
                               for i, t in enumerate(trained["texts"])), encoding="utf-8")
    import_generations(lake, same, run_id="r2", model="m", setting="unconditional")
    score_runs(lake, ["r2"], classifier="tf", progress=False)
    assert is_scored(lake, "tf", "r2")
    import_generations(lake, changed, run_id="r2", model="m", setting="unconditional")  # same ids, new texts
    assert not is_scored(lake, "tf", "r2")
