"""The index-labelled membership-inference benchmark (ingest/mia_benchmark, `lmaudit mia-benchmark`).

Oracles: labels by brute force (`IndexEngine.count` of the whole text and of every 50-token window, not the
longest-match pass the code uses), AUC and ROC points from scikit-learn (`roc_auc_score`, `roc_curve`), the
bootstrap against a plain loop over resamples, the mart against scikit-learn on its own groups."""

from __future__ import annotations

import json
import random
import string
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score, roc_curve

from ingest.cli.main import run
from ingest.corpora import open_corpus, register_corpus
from ingest.lake import Lake
from ingest.mia_benchmark.labels import WINDOW
from ingest.mia_benchmark.metrics import auc, bootstrap_auc, roc_points, tpr_at_fpr


def _brute_label(engine, ids: list[int], window: int = WINDOW) -> str:
    if len(ids) < window:  # empty, or too short to tell, found or not
        return "ambiguous"
    if engine.count(ids) > 0:
        return "member"
    if any(engine.count(ids[b:b + window]) > 0 for b in range(len(ids) - window + 1)):
        return "ambiguous"
    return "non_member"


def _fresh(seed: int, n_words: int = 60) -> str:
    r = random.Random(seed)
    return " ".join("".join(r.choice(string.ascii_lowercase) for _ in range(r.randint(3, 8))) for _ in range(n_words))


@pytest.fixture(scope="module")
def bench(mini_stack, tmp_path_factory):
    """A warehouse with the mini corpus registered and a candidate file of known status."""
    home = tmp_path_factory.mktemp("mia")
    lake = Lake(home)
    lake.init()
    register_corpus(lake, "mini", [mini_stack["index"]])
    docs = mini_stack["docs"]
    cands = [
        {"id": "whole-doc", "text": docs[0]["text"], "domain": "code"},  # verbatim: member
        {"id": "cat", "text": docs[-1]["text"], "domain": "prose"},  # verbatim, repeated text: member
        {"id": "fresh-1", "text": _fresh(1), "domain": "prose"},  # written fresh: non-member
        {"id": "fresh-2", "text": _fresh(2), "domain": "code"},
        {"id": "partly", "text": docs[1]["text"][:600] + " " + _fresh(3), "domain": "code"},  # ambiguous
        {"id": "short", "text": "zqxv wkjh", "domain": "prose"},  # short and absent: ambiguous
        {"id": "short-found", "text": docs[0]["text"][:40], "domain": "code"},  # short, in corpus: ambiguous too
    ]
    f = home / "cands.jsonl"
    f.write_text("".join(json.dumps(c) + "\n" for c in cands))
    return {"home": home, "lake": lake, "file": f, "cands": cands}


def test_labels_match_brute_force_lookup(bench, mini_stack) -> None:
    home, lake = bench["home"], bench["lake"]
    assert run(["-w", str(home), "mia-benchmark", "label", "--corpus", "mini", "--texts", str(bench["file"]),
                "--from-corpus", "4", "--max-tokens", "120"]) == 0
    rows = {r["item_id"]: r for r in lake.read("mia_labels").to_pylist()}
    expected_status = {"whole-doc": "member", "cat": "member", "fresh-1": "non_member", "fresh-2": "non_member",
                       "partly": "ambiguous", "short": "ambiguous", "short-found": "ambiguous"}
    for item_id, label in expected_status.items():
        assert rows[item_id]["label"] == label, (item_id, rows[item_id]["reason"])
    oc = open_corpus(lake, "mini")
    try:
        for r in rows.values():  # every row, the corpus draws included, against the brute-force rule
            ids = [int(t) for t in oc.tokenizer.encode(r["text"])]
            assert r["label"] == _brute_label(oc.engine, ids), r["item_id"]
            assert r["n_tokens"] == len(ids)
    finally:
        oc.engine.close()
    drawn = [r for r in rows.values() if r["item_kind"] == "corpus_doc"]
    assert len(drawn) == 4 and all(r["label"] == "member" for r in drawn)
    assert rows["partly"]["n_windows_found"] > 0 and rows["fresh-1"]["n_windows_found"] == 0
    assert rows["short-found"]["longest_match"] == rows["short-found"]["n_tokens"] < WINDOW  # found whole, still short
    # labelling the same file again replaces its rows (no duplicates)
    n = lake.read("mia_labels").num_rows
    assert run(["-w", str(home), "mia-benchmark", "label", "--corpus", "mini", "--texts", str(bench["file"])]) == 0
    assert lake.read("mia_labels").num_rows == n


@pytest.mark.parametrize("member,non_member", [
    ([0.9, 0.8, 0.8, 0.3], [0.8, 0.1, 0.3, 0.3, 0.2]),  # ties across and within groups
    ([1.0, 1.0, 1.0], [1.0, 1.0]),  # every score tied
    ([0.5], [0.4, 0.6]),
    (list(np.linspace(0, 1, 37)), list(np.linspace(-0.5, 0.7, 1500))),  # enough non-members for 0.1 % FPR
])
def test_auc_and_tpr_match_scikit_learn(member, non_member) -> None:
    y = np.r_[np.ones(len(member)), np.zeros(len(non_member))]
    s = np.r_[member, non_member]
    assert auc(member, non_member) == pytest.approx(roc_auc_score(y, s), abs=1e-12)
    fpr, tpr, _ = roc_curve(y, s, drop_intermediate=False)
    f2, t2 = roc_points(member, non_member)
    np.testing.assert_allclose(f2, fpr)
    np.testing.assert_allclose(t2, tpr)
    for target in (0.01, 0.001):
        for drop in (False, True):  # the dropped points never hold the largest TPR under a bound
            fpr, tpr, _ = roc_curve(y, s, drop_intermediate=drop)
            assert tpr_at_fpr(member, non_member, target) == pytest.approx(tpr[np.where(fpr < target)[0][-1]])


def test_tpr_at_fpr_by_hand() -> None:
    # 200 non-members 0..199 (FPR 0.005 per false positive), members 300, 199.5, 198.5, 150
    non = list(range(200))
    mem = [300, 199.5, 198.5, 150]
    # threshold 199.5: FPR 0, TPR 2/4; threshold 198.5: FPR 1/200, TPR 3/4; 198: FPR 2/200 = 0.01, not < 0.01
    assert tpr_at_fpr(mem, non, 0.01) == 0.75
    assert tpr_at_fpr(mem, non, 0.0051) == 0.75
    assert tpr_at_fpr(mem, non, 0.005) == 0.5  # strictly below, as mimir
    assert tpr_at_fpr(mem, non, 0.001) == 0.5


def test_bootstrap_auc_against_a_plain_loop() -> None:
    r = np.random.default_rng(3)
    m, n = r.integers(0, 5, 30).astype(float), r.integers(0, 4, 40).astype(float)
    lo, hi = bootstrap_auc(m, n, n_boot=200, seed=7)
    rng = np.random.default_rng(7)
    im = rng.integers(0, len(m), size=(200, len(m)))
    inn = rng.integers(0, len(n), size=(200, len(n)))
    aucs = [roc_auc_score(np.r_[np.ones(len(m)), np.zeros(len(n))], np.r_[m[a], n[b]]) for a, b in zip(im, inn)]
    assert (lo, hi) == pytest.approx((np.quantile(aucs, 0.025), np.quantile(aucs, 0.975)))
    assert lo <= auc(m, n) <= hi


def test_mart_rows_per_domain_and_pooled() -> None:
    import pyarrow as pa

    from ingest.mia_benchmark.marts import benchmark_table

    r = np.random.default_rng(0)
    rows = []
    for domain, shift in (("code", 1.0), ("prose", 0.2)):
        for label, k in (("member", 25), ("non_member", 40)):
            for v in r.normal(shift if label == "member" else 0.0, 1.0, k):
                rows.append({"corpus": "c", "model": "m", "scoring": "authors", "score_name": "mia_loss",
                             "domain": domain, "label": label, "member_score": float(v)})
    labels = pa.Table.from_pylist([{"corpus": "c", "domain": "code", "label": "ambiguous"}] * 3
                                  + [{"corpus": "c", "domain": "prose", "label": "member"}])
    out = {row["domain"]: row for row in benchmark_table(pa.Table.from_pylist(rows), labels, n_boot=100).to_pylist()}
    assert set(out) == {"code", "prose", "all"}
    for domain in ("code", "prose", "all"):
        g = [x for x in rows if domain == "all" or x["domain"] == domain]
        y = [x["label"] == "member" for x in g]
        s = [x["member_score"] for x in g]
        o = out[domain]
        assert o["auc"] == pytest.approx(roc_auc_score(y, s))
        fpr, tpr, _ = roc_curve(y, s)
        assert o["tpr_at_1pct_fpr"] == pytest.approx(tpr[np.where(fpr < 0.01)[0][-1]])
        assert (o["n_members"], o["n_non_members"]) == (sum(y), len(y) - sum(y))
        assert o["auc_low"] <= o["auc"] <= o["auc_high"]
    assert (out["code"]["n_ambiguous"], out["prose"]["n_ambiguous"], out["all"]["n_ambiguous"]) == (3, 0, 3)
    shuffled = pa.Table.from_pylist([rows[i] for i in np.random.default_rng(1).permutation(len(rows))])
    again = {row["domain"]: row for row in benchmark_table(shuffled, labels, n_boot=100).to_pylist()}
    assert again == out  # the same interval whatever order the rows arrive in


def _lake_files(home: Path) -> set:
    return {(p.relative_to(home), p.stat().st_size) for p in (home / "lake").rglob("*") if p.is_file()}


@pytest.mark.parametrize("case,args,message", [
    ("no source", [], "say what to label"),
    ("unknown corpus", ["--corpus", "nope", "--reference"], "not registered"),
    ("missing file", ["--texts", "/nonexistent/c.jsonl"], "no such file"),
    ("no text", ["--texts", "{no_text}"], "no text"),
    ("duplicate id", ["--texts", "{dup}"], "duplicate id"),
    ("no reference docs", ["--reference"], "no reference documents"),
    ("bad window", ["--texts", "{file}", "--window", "0"], "--window"),
])
def test_bad_inputs_are_one_line_exit_2_and_write_nothing(bench, capsys, case, args, message) -> None:
    home = bench["home"]
    (home / "no_text.jsonl").write_text('{"id": "a", "text": "hello there"}\n{"id": "b", "text": "  "}\n')
    (home / "dup.jsonl").write_text('{"id": "a", "text": "hello"}\n{"id": "a", "text": "there"}\n')
    paths = {"no_text": home / "no_text.jsonl", "dup": home / "dup.jsonl", "file": bench["file"]}
    args = [a.format(**{k: str(v) for k, v in paths.items()}) for a in args]
    if "--corpus" not in args:
        args = ["--corpus", "mini", *args]
    before = _lake_files(home)
    capsys.readouterr()
    assert run(["-w", str(home), "mia-benchmark", "label", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error:") and message in err, err
    assert _lake_files(home) == before


def test_score_scores_every_member_and_non_member_once(bench, mini_stack) -> None:
    import duckdb

    home, lake = bench["home"], bench["lake"]
    if not lake.read("mia_labels").num_rows:
        assert run(["-w", str(home), "mia-benchmark", "label", "--corpus", "mini", "--texts", str(bench["file"])]) == 0
    args = ["-w", str(home), "mia-benchmark", "score", "--corpus", "mini", "--model", str(mini_stack["model"])]
    assert run(args) == 0
    labels = lake.glob("mia_labels")
    joined = duckdb.connect().sql(f"""select l.label, count(s.score_id) as n_scores, count(*) as n
        from read_parquet('{labels}', union_by_name = true) l
        left join read_parquet('{lake.glob("text_scores")}', union_by_name = true) s
          on s.item_kind = l.item_kind and s.item_id = l.item_id and s.text_hash = l.text_hash
        group by l.label order by l.label""").fetchall()
    counts = {label: (n_scores, n) for label, n_scores, n in joined}
    assert counts["member"][0] == counts["member"][1] >= 2  # every member and non-member scored once
    assert counts["non_member"][0] == counts["non_member"][1] == 2
    assert counts["ambiguous"][0] == 0  # ambiguous candidates are never scored
    n = lake.read("text_scores").num_rows
    assert run(args) == 0 and lake.read("text_scores").num_rows == n  # resumable: nothing scored twice
    # another partition prefix (a reference model) for texts already scored would duplicate their keys: skipped
    assert run(args + ["--ref-model", str(mini_stack["model"])]) == 0
    ids = lake.read("text_scores").column("score_id").to_pylist()
    assert len(ids) == n == len(set(ids))


def test_score_without_labels_is_one_line(bench, capsys, tmp_path) -> None:
    capsys.readouterr()
    assert run(["-w", str(tmp_path), "mia-benchmark", "score", "--corpus", "mini", "--model", "x"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "mia-benchmark label" in err, err


@pytest.mark.slow
def test_mart_on_a_tiny_lake(tmp_path) -> None:
    """Labels and scores written into a lake, `lmaudit build`, fct_mia_benchmark against scikit-learn: the
    join on the labelled text, the orientation (-loss), the ambiguous count, the pooled row."""
    from datetime import datetime, timezone

    import duckdb

    from ingest.build import build
    from ingest.lake import make_key, text_hash
    from ingest.warehouse_db import db_path

    lake = Lake(tmp_path)
    lake.init()
    r = np.random.default_rng(5)
    labels, scores, truth = [], [], []
    for i in range(40):
        label = "member" if i % 3 == 0 else "ambiguous" if i % 10 == 1 else "non_member"
        domain = "code" if i % 2 else "prose"
        text = f"candidate {i}"
        h = text_hash(text)
        labels.append({"label_id": make_key("c", "text", str(i), h), "corpus": "c", "item_kind": "text",
                       "item_id": str(i), "text_hash": h, "text": text, "domain": domain, "source": "file:f",
                       "label": label, "created_at": datetime.now(timezone.utc)})
        loss = float(r.normal(2.0 if label == "member" else 2.6, 0.4))
        stale = i == 6  # scored from another text: never counts
        scores.append({"score_id": make_key("m", "text", str(i), h, "authors"), "model": "m", "item_id": str(i),
                       "item_kind": "text", "text_hash": "old" if stale else h, "loss": loss, "zlib_loss": loss / 10,
                       "mink": -loss, "minkpp": -loss, "params": '{"scoring": "authors"}'})
        if label != "ambiguous" and not stale:
            truth.append((domain, label == "member", -loss))
    lake.write("mia_labels", "t", labels)
    lake.write("text_scores", "t", scores)
    assert build(tmp_path, select=["+fct_mia_benchmark"], progress=False).success
    with duckdb.connect(str(db_path(tmp_path)), read_only=True) as con:
        got = {d: (nm, nn, na, a, t1) for d, nm, nn, na, a, t1 in con.execute(
            "select domain, n_members, n_non_members, n_ambiguous, auc, tpr_at_1pct_fpr from fct_mia_benchmark "
            "where score_name = 'mia_loss'").fetchall()}
    assert set(got) == {"code", "prose", "all"}
    for domain in ("code", "prose", "all"):
        g = [t for t in truth if domain == "all" or t[0] == domain]
        y, s = [t[1] for t in g], [t[2] for t in g]
        fpr, tpr, _ = roc_curve(y, s)
        n_amb = sum(1 for x in labels if x["label"] == "ambiguous" and domain in ("all", x["domain"]))
        assert got[domain][:3] == (sum(y), len(y) - sum(y), n_amb)
        assert got[domain][3] == pytest.approx(roc_auc_score(y, s))
        assert got[domain][4] == pytest.approx(tpr[np.where(fpr < 0.01)[0][-1]])


def test_a_source_partly_scored_with_another_ref_model_is_refused_not_scored_twice(tmp_path: Path) -> None:
    """An interrupted `mia-benchmark score --ref-model A`, resumed with `--ref-model B` (or none), used to score
    the whole source again under B's partition prefix: its finished texts got a second row with the same
    score_id, and `lmaudit build` failed on the unique test. Now the resume is one line; the same ref model
    resumes; a source scored in full under A counts as done for any ref model."""
    from ingest.errors import UserError
    from ingest.lake import make_key, text_hash
    from ingest.mia_benchmark.run import unscored_sources

    lake = Lake(tmp_path / "wh")
    labels = [{"label_id": make_key("c", "text", f"t{i}"), "corpus": "c", "item_kind": "text", "item_id": f"t{i}",
               "text_hash": text_hash(f"text {i}"), "text": f"text {i}", "domain": "d", "source": "file",
               "label": "member" if i % 2 else "non_member"} for i in range(4)]
    lake.write("mia_labels", "c--file", labels)

    def scored(ids: list[int], ref: str | None) -> None:
        lake.write("text_scores", f"s-{ref}", [
            {"score_id": make_key("m", "text", f"t{i}", text_hash(f"text {i}")), "model": "m", "item_id": f"t{i}",
             "item_kind": "text", "text_hash": text_hash(f"text {i}"), "ref_model": ref,
             "params": '{"scoring": "authors"}'} for i in ids])

    scored([0, 1], "A")
    with pytest.raises(UserError, match=r"partly scored under m with --ref-model A and this run has no --ref-model"):
        unscored_sources(lake, "c", "m", "authors")
    with pytest.raises(UserError, match=r"run it again with --ref-model A"):
        unscored_sources(lake, "c", "m", "authors", "B")
    todo, done = unscored_sources(lake, "c", "m", "authors", "A")  # the same ref model resumes
    assert [s for s, _ in todo] == ["mia:c:file"] and done == []
    assert unscored_sources(lake, "c", "m", "lmaudit") == (todo, [])  # another convention is another key
    scored([0, 1, 2, 3], "A")
    assert unscored_sources(lake, "c", "m", "authors", "B") == ([], ["mia:c:file"])
