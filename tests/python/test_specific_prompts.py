"""The specific-prompt pipeline (ingest/prompts/specific/, `lmaudit prompts specific`, fct_prompt_closeness)
against independent oracles: hand-computed tables and a brute-force search for the equal-share selection,
a pandas groupby for the length adjustment, scikit-learn's cosine similarity for the nearest-document
search, scipy.stats.bootstrap for the closeness intervals (in Python and through dbt on a hand-built lake),
and an end-to-end run on a real index of prose (pydoc topics) with a sentence planted from the training
corpus that the leakage filter must drop."""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import random
import re
from collections import Counter, defaultdict
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from scipy import stats

from ingest.errors import UserError
from ingest.prompts.specific import candidates as C
from ingest.prompts.specific import select as SEL
from ingest.prompts.specific.embedders import EMBEDDERS, LSAEmbedder, nearest_similarity

# -- oracles shared by several tests ---------------------------------------------------------------------


def fair_shares(available: dict[str, int], n: int) -> dict[str, int]:
    """Brute force: of every allocation q (0 <= q_s <= available_s, sum = min(n, total)), the most equal one
    (its counts sorted from largest up are lexicographically smallest: the largest share as small as
    possible, then the next, ...), the remainder of an uneven split going to sources in name order."""
    names = sorted(available)
    total = min(n, sum(available.values()))
    best = None
    for q in itertools.product(*(range(available[s] + 1) for s in names)):
        if sum(q) != total:
            continue
        key = (sorted(q, reverse=True), [-x for x in q])
        if best is None or key < best[0]:
            best = (key, q)
    return dict(zip(names, best[1]))


def _rng(seed: int, *names: str) -> np.random.Generator:
    """The documented stream protocol, written out: default_rng([seed, first 8 bytes of BLAKE2b(names)])."""
    key = int.from_bytes(hashlib.blake2b("\x1f".join(names).encode(), digest_size=8).digest(), "little")
    return np.random.default_rng([seed, key])


# -- select: equal shares --------------------------------------------------------------------------------

EQUAL_SHARES = [  # (available, n, expected), computed by hand
    ({"a": 5, "b": 5, "c": 5}, 9, {"a": 3, "b": 3, "c": 3}),
    ({"a": 10, "b": 10, "c": 1}, 9, {"a": 4, "b": 4, "c": 1}),  # c gives all; its unused 2 go to a and b
    ({"a": 10, "b": 1, "c": 1}, 6, {"a": 4, "b": 1, "c": 1}),  # two short sources, a takes both unused shares
    ({"a": 1, "b": 1, "c": 1, "d": 10}, 8, {"a": 1, "b": 1, "c": 1, "d": 5}),
    ({"a": 10, "b": 10, "c": 2}, 7, {"a": 3, "b": 2, "c": 2}),  # 7 = 3 + 2 + 2: the extra one to a (name order)
    ({"b": 10, "a": 10}, 5, {"a": 3, "b": 2}),  # name order, not insertion order
    ({"a": 2, "b": 3}, 10, {"a": 2, "b": 3}),  # n larger than available: everything
    ({"a": 0, "b": 4}, 2, {"a": 0, "b": 2}),  # an empty source
    ({"x": 3}, 0, {"x": 0}),
    ({"a": 4, "b": 4}, 8, {"a": 4, "b": 4}),
]


@pytest.mark.parametrize("available, n, expected", EQUAL_SHARES)
def test_equal_shares_hand_table(available, n, expected) -> None:
    got = SEL.equal_shares(available, n)
    assert got == expected
    assert sum(got.values()) == min(n, sum(available.values()))
    assert fair_shares(available, n) == expected  # the oracle agrees with the hand table


def _random_share_cases() -> list[tuple[dict[str, int], int]]:
    rng = random.Random(16)
    cases = [({"a": 10, "b": 2, "c": 10, "d": 10}, 10)]
    for _ in range(250):
        k = rng.randint(1, 4)
        avail = {s: rng.randint(0, 6) for s in "abcd"[:k]}
        cases.append((avail, rng.randint(0, 26)))
    return cases


def test_equal_shares_bounds_total_and_floor_on_random_cases() -> None:
    """What holds for any equal split: no source gives more than it has, the total is min(n, available),
    and every source gives at least min(its candidates, total // non-empty sources)."""
    for avail, n in _random_share_cases():
        got = SEL.equal_shares(avail, n)
        total = min(n, sum(avail.values()))
        assert set(got) == set(avail)
        assert sum(got.values()) == total, (avail, n, got)
        k = sum(1 for a in avail.values() if a > 0)
        for s, a in avail.items():
            assert 0 <= got[s] <= a
            assert got[s] >= min(a, total // k if k else 0), (avail, n, got)


def test_equal_shares_equals_brute_force_on_random_cases() -> None:
    """Includes {a:10, b:2, c:10, d:10}, n=10: a round-robin that hands a round's remainder to a source that
    is then capped gave 4/2/2/2 instead of 3/2/3/2."""
    wrong = [(avail, n, SEL.equal_shares(avail, n), fair_shares(avail, n)) for avail, n in _random_share_cases()
             if SEL.equal_shares(avail, n) != fair_shares(avail, n)]
    assert not wrong, f"{len(wrong)} cases differ, e.g. {wrong[:3]}"


# -- select: the chosen candidates -----------------------------------------------------------------------

def test_select_hand_table() -> None:
    sources = ["a", "b", "a", "c", "a", "b"]
    scores = np.array([0.1, 0.5, 0.9, 0.2, 0.9, -1.0])
    # a has 3, b 2, c 1; n = 4: 1 each, the extra one to a -> a's two best (2 and 4, tied), b's best, c's only
    assert SEL.select(sources, scores, 4) == [1, 2, 3, 4]
    # n = 3: one each; a's tie at 0.9 goes to the earlier position (2)
    assert SEL.select(sources, scores, 3) == [1, 2, 3]
    # n = 5: c gives its only one, a and b split the rest 2/2
    assert SEL.select(sources, scores, 5) == [1, 2, 3, 4, 5]
    # n larger than the candidates: all of them
    assert SEL.select(sources, scores, 50) == list(range(6))
    assert SEL.select(sources, scores, 1) == [2]  # one prompt: the first source in name order, its best


def test_select_brute_force() -> None:
    """Within each source the chosen set is the best-scoring subset of its size (scores distinct); the total
    is min(n, candidates); every source's count is between the equal floor and its candidates."""
    rng = np.random.default_rng(3)
    for _ in range(60):
        m = int(rng.integers(1, 10))
        sources = [str(s) for s in rng.choice(list("xyz"), size=m)]
        scores = rng.permutation(m).astype(float) / m - 0.3  # distinct
        n = int(rng.integers(1, 12))
        chosen = SEL.select(sources, scores, n)
        assert chosen == sorted(set(chosen))
        assert len(chosen) == min(n, m)
        by_src = defaultdict(list)
        for i, s in enumerate(sources):
            by_src[s].append(i)
        for s, ix in by_src.items():
            mine = [i for i in chosen if sources[i] == s]
            best = max(itertools.combinations(ix, len(mine)), key=lambda c: sum(scores[i] for i in c))
            assert sorted(best) == mine, (sources, scores, n)
            assert len(mine) >= min(len(ix), min(n, m) // len(by_src))


def test_length_adjusted_equals_a_pandas_groupby() -> None:
    import pandas as pd

    rng = np.random.default_rng(11)
    sim = rng.uniform(-0.2, 0.9, size=40)
    lengths = [int(x) for x in rng.integers(10, 16, size=40)]
    lengths[0] = 99  # a length of its own: its adjusted score is 0
    df = pd.DataFrame({"sim": sim, "len": lengths})
    want = (df["sim"] - df.groupby("len")["sim"].transform("mean")).to_numpy()
    got = SEL.length_adjusted(sim, lengths)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    assert got[0] == 0.0
    # the point of the adjustment: the mean score of every length is zero
    assert np.allclose(pd.Series(got).groupby(lengths).mean().to_numpy(), 0.0, atol=1e-12)


# -- embedders -------------------------------------------------------------------------------------------

def _unit_rows(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_nearest_similarity_equals_sklearn_cosine_max() -> None:
    from sklearn.metrics.pairwise import cosine_similarity

    rng = np.random.default_rng(5)
    items, ref = _unit_rows(rng.normal(size=(37, 8))), _unit_rows(rng.normal(size=(53, 8)))
    want = cosine_similarity(items, ref).max(axis=1)
    np.testing.assert_allclose(nearest_similarity(items, ref), want, rtol=0, atol=1e-12)
    np.testing.assert_allclose(nearest_similarity(items, ref, block=5), want, rtol=0, atol=1e-12)
    assert np.isnan(nearest_similarity(items[:3], ref[:0])).all()


def _pydoc_split() -> tuple[list[str], list[str]]:
    """Real English prose every Python has: the pydoc topics, alternately training and held out."""
    import pydoc_data.topics as topics

    keys = sorted(topics.topics)
    return [topics.topics[k] for k in keys[0::2]], [topics.topics[k] for k in keys[1::2]]


def test_lsa_embedder_unit_rows_seeded_and_a_near_copy_is_closest() -> None:
    train, held = _pydoc_split()
    a = LSAEmbedder(dims=32, seed=0).fit(train)
    b = EMBEDDERS.create("lsa", dims=32, seed=0).fit(train)
    texts = held[:5] + [train[3][:400]]
    ea, eb = a.embed(texts), b.embed(texts)
    np.testing.assert_allclose(ea, eb, rtol=0, atol=1e-12)  # same seed, same numbers
    np.testing.assert_allclose(np.linalg.norm(ea, axis=1), 1.0, atol=1e-12)
    # a near copy of a training document (four of its words changed) vs an everyday sentence
    src = sorted(range(len(train)), key=lambda i: len(train[i]))[len(train) // 2]
    words = train[src].split()
    for i in (5, 30, 60, 90):
        words[i] = "zebra"
    near, unrelated = " ".join(words), "My grandmother tells the best stories about her garden."
    ref = a.embed(train)
    vec = a.embed([near, unrelated])
    sims = vec @ ref.T
    assert int(np.argmax(sims[0])) == src
    near_sim, unrelated_sim = nearest_similarity(vec, ref)
    assert near_sim > 0.9 and near_sim > unrelated_sim + 0.2, (near_sim, unrelated_sim)


# -- candidates ------------------------------------------------------------------------------------------

def test_split_sentences_hand_examples() -> None:
    text = ("The cat sat on the mat. It was happy!\nAnd then\nit   left the room.\n\n"
            "x = 1 + y.\n"
            "See http://example.org for more. Use `foo` in code. A table | with pipes.\n\n"
            "Wait... what happened? The 1234 5678 90 12.\n\n"
            "no capital at the start. \"Quoted words are fine,\" she said. No end here\n\n"
            "Email me at a@b.com today. The value is {x}. Extra  spaces are   collapsed? (Brackets work too.)")
    assert C.split_sentences(text) == [
        "The cat sat on the mat.", "It was happy!", "And then it left the room.",
        "\"Quoted words are fine,\" she said.", "Extra spaces are collapsed?", "(Brackets work too.)",
    ]


@pytest.mark.parametrize("n, tol", [(1, 1), (5, 1), (10, 1), (11, 1), (19, 1), (20, 2), (29, 2), (30, 3),
                                    (55, 5), (100, 10)])
def test_length_tolerance(n: int, tol: int) -> None:
    assert C.length_tolerance(n) == tol


def _words(s: str) -> list[str]:
    return s.split()


def test_pick_sentence_length_and_language() -> None:
    doc = C.CandidateDoc("d1", "src", "Short one here. This sentence has exactly six words. "
                         "This one is a little longer with nine words. "
                         "Here we have a sentence that has twelve words in it now.")
    yes = lambda s: True  # noqa: E731
    pick = lambda targets, lang=yes: C.pick_sentence(doc, targets, _words, lang, random.Random(0))  # noqa: E731
    assert pick([6]).text == "This sentence has exactly six words."
    assert pick([7]).n_tokens == 6  # within one token
    assert pick([10]).n_tokens == 9
    assert pick([13]).n_tokens == 12  # above 10 tokens the tolerance is int(0.1 n), at least 1
    assert pick([2]).n_tokens == 3
    assert pick([15]) is None  # nothing within 14..16
    # targets are tried in order: the first that fits wins
    assert pick([40, 9, 6]).n_tokens == 9
    assert pick([40, 30]) is None
    # the language check: a sentence it rejects is skipped for the next one that fits, then the next target
    no_six = lambda s: "six" not in s  # noqa: E731
    assert pick([6], no_six) is None
    assert pick([6, 12], no_six).n_tokens == 12
    c = pick([12])
    assert (c.doc_id, c.source) == ("d1", "src")


def test_pick_sentence_closest_length_wins_and_ties_are_seeded() -> None:
    doc = C.CandidateDoc("d", "s", " ".join(f"Sentence number {w} has {k} words{' more' * (k - 7)} here."
                                            for w, k in (("one", 7), ("two", 9), ("three", 9))))
    got = {C.pick_sentence(doc, [8], _words, lambda s: True, random.Random(seed)).text for seed in range(20)}
    assert len(got) == 3  # 7 and 9 words are equally close to 8: a seeded random tie-break
    # 22 words: tolerance 2, the closest (21, not 20) wins
    doc2 = C.CandidateDoc("d", "s", "Alpha " + "word " * 18 + "end. Beta " + "word " * 19 + "end.")
    c = C.pick_sentence(doc2, [22], _words, lambda s: True, random.Random(0))
    assert c.n_tokens == 21
    assert C.pick_sentence(doc2, [23], _words, lambda s: True, random.Random(0)).n_tokens == 21
    assert C.pick_sentence(doc2, [24], _words, lambda s: True, random.Random(0)) is None


def test_the_language_check_of_the_pipeline() -> None:
    from ingest.prompts.specific.pipeline import _is_language

    en = _is_language("en")
    assert en("The children are playing in the garden with their friends.")
    assert not en("Børnene leger i haven med deres venner hver dag.")
    assert not en("Die Kinder spielen mit ihren Freunden im Garten.")
    assert not en("Kubernetes Terraform Grafana Prometheus Elasticsearch.")
    da = _is_language("da")
    assert da("Børnene leger i haven med deres venner hver dag.")
    import wordfreq

    top = set(wordfreq.top_n_list("en", 100))
    assert {"the", "and"} <= top and not {"cat", "dog"} & top
    assert C.function_word_share("the cat and the dog", "en") == pytest.approx(3 / 5)


def test_read_candidate_docs_fields_and_errors(tmp_path: Path) -> None:
    f = tmp_path / "cands.jsonl"
    f.write_text("\n".join(json.dumps(o) for o in [
        {"text": "A.", "source": "s1", "id": "x"}, {"text": "B.", "domain": "docs"}, {"text": "C."},
        {"text": "D.", "kind": "k1", "source": "s2", "doc_id": "y"}]) + "\n\n")
    docs = C.read_candidate_docs(f)
    assert [(d.doc_id, d.source, d.text) for d in docs] == [
        ("x", "s1", "A."), ("cands.jsonl:2", "docs", "B."), ("cands.jsonl:3", "cands", "C."), ("y", "s2", "D.")]
    assert [d.source for d in C.read_candidate_docs(f, source_field="kind")] == ["s1", "docs", "cands", "k1"]
    for body, message in [('{"text": "a"}\nnot json\n', "line 2: not valid JSON"),
                          ('{"text": "a", "id": 1}\n{"text": "b", "id": "1"}\n', "appears twice"),
                          ('{"txt": "a"}\n', "\"text\" field"), ("\n\n", "empty")]:
        f.write_text(body)
        with pytest.raises(UserError, match=message):
            C.read_candidate_docs(f)
    with pytest.raises(UserError, match="not found"):
        C.read_candidate_docs(tmp_path / "missing.jsonl")


def test_sample_per_source_caps_each_source_and_is_seeded() -> None:
    docs = [C.CandidateDoc(f"{s}{i}", s, f"text {s} {i}") for s, k in (("big", 30), ("small", 3)) for i in range(k)]
    a = C.sample_per_source(docs, 10, seed=1)
    assert Counter(d.source for d in a) == {"big": 10, "small": 3}
    assert C.sample_per_source(docs, 10, seed=1) == a
    assert {d.doc_id for d in C.sample_per_source(docs, 10, seed=2)} != {d.doc_id for d in a}


def test_training_samples_are_seeded_and_disjoint_when_the_corpus_allows() -> None:
    from ingest.prompts.specific.training_sample import sample_doc_indices

    sel = sample_doc_indices(100, 30, 43)
    assert sel == sorted(set(sel)) and len(sel) == 30 and sel == sample_doc_indices(100, 30, 43)
    ev = sample_doc_indices(100, 30, 42, exclude=set(sel))
    assert len(ev) == 30 and not set(ev) & set(sel)
    assert sample_doc_indices(100, 70, 42, exclude=set(sel)) == sorted(set(range(100)) - set(sel))
    assert sample_doc_indices(20, 50, 43) == list(range(20))  # k above the corpus: every document


def test_read_candidate_docs_keeps_an_id_of_zero(tmp_path: Path) -> None:
    f = tmp_path / "c.jsonl"
    f.write_text('{"text": "A.", "id": 0}\n{"text": "B.", "id": 1}\n')
    assert [d.doc_id for d in C.read_candidate_docs(f)] == ["0", "1"]


# -- the closeness bootstrap: Python against scipy -------------------------------------------------------

def _closeness_items(seed: int = 0) -> list[dict]:
    """Two prompt sets; ps-a has all four groups, ps-b no generic group (so no difference). Ids are random
    strings, so their order is not the order the rows are written in."""
    rng = np.random.default_rng(seed)
    out = []
    for pset, groups in (("ps-a", {"generic": (15, 0.40), "candidate": (22, 0.42), "specific": (12, 0.55),
                                   "training_sentence": (9, 0.60)}),
                         ("ps-b", {"specific": (7, 0.5), "candidate": (5, 0.45)})):
        for g, (n, mu) in groups.items():
            for i in range(n):
                cid = hashlib.sha1(f"{pset}{g}{i}{seed}".encode()).hexdigest()
                out.append({"closeness_id": cid, "prompt_set": pset, "item_group": g, "item_id": f"{g}:{i}",
                            "similarity": float(np.clip(rng.normal(mu, 0.08), -1, 1))})
    rng.shuffle(out)
    return out


def _oracle(items: list[dict], n_resamples: int, seed: int, level: float) -> dict[tuple[str, str], dict]:
    """scipy.stats.bootstrap (percentile) per (prompt set, group) with the documented stream; differences as
    quantiles of the group's bootstrap distribution minus the generic group's."""
    groups: dict[tuple[str, str], list[tuple[str, float]]] = defaultdict(list)
    for r in items:
        groups[(r["prompt_set"], r["item_group"])].append((r["closeness_id"], r["similarity"]))
    res, dist = {}, {}
    for (pset, g), vals in groups.items():
        x = np.array([v for _, v in sorted(vals)])
        b = stats.bootstrap((x,), np.mean, n_resamples=n_resamples, method="percentile", confidence_level=level,
                            rng=_rng(seed, "closeness", pset, g))
        dist[(pset, g)] = b.bootstrap_distribution
        res[(pset, g)] = {"n_items": len(x), "mean_similarity": float(x.mean()),
                          "ci_low": b.confidence_interval.low, "ci_high": b.confidence_interval.high,
                          "diff_vs_generic": None, "diff_ci_low": None, "diff_ci_high": None}
    for (pset, g), r in res.items():
        if g != "generic" and (pset, "generic") in res:
            d = dist[(pset, g)] - dist[(pset, "generic")]
            a = (1 - level) / 2
            r["diff_vs_generic"] = r["mean_similarity"] - res[(pset, "generic")]["mean_similarity"]
            r["diff_ci_low"], r["diff_ci_high"] = (float(q) for q in np.quantile(d, [a, 1 - a]))
    return res


def _close(a, b, tol=1e-9) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(a, b, rel_tol=0, abs_tol=tol)


@pytest.mark.parametrize("n_resamples, seed, level", [(999, 42, 0.95), (500, 7, 0.9)])
def test_closeness_bootstrap_equals_scipy(n_resamples: int, seed: int, level: float) -> None:
    from ingest.marts.prompt_closeness import closeness_bootstrap
    from ingest.marts.propme import Params

    items = _closeness_items()
    got = closeness_bootstrap(pa.Table.from_pylist(items), Params(n_resamples, seed, level, ()))
    want = _oracle(items, n_resamples, seed, level)
    rows = {(r["prompt_set"], r["item_group"]): r for r in got.to_pylist()}
    assert set(rows) == set(want)
    for k, w in want.items():
        for col, v in w.items():
            assert _close(rows[k][col], v), (k, col, rows[k][col], v)
        assert (rows[k]["n_resamples"], rows[k]["seed"], rows[k]["ci_level"]) == (n_resamples, seed, level)
    assert rows[("ps-a", "specific")]["diff_ci_low"] > 0  # built to be closer than generic


def test_closeness_bootstrap_without_params_or_rows_is_empty() -> None:
    from ingest.marts.prompt_closeness import SCHEMA, closeness_bootstrap
    from ingest.marts.propme import Params

    assert closeness_bootstrap(pa.Table.from_pylist(_closeness_items()), None).num_rows == 0
    empty = pa.table({"closeness_id": pa.array([], pa.string()), "prompt_set": pa.array([], pa.string()),
                      "item_group": pa.array([], pa.string()), "similarity": pa.array([], pa.float64())})
    out = closeness_bootstrap(empty, Params(10, 1, 0.95, ()))
    assert out.num_rows == 0 and out.schema == SCHEMA


# -- the mart through dbt on a hand-built lake -----------------------------------------------------------

B_DBT = 200


@pytest.mark.slow
def test_fct_prompt_closeness_through_dbt_equals_scipy(tmp_path: Path) -> None:
    import duckdb

    from ingest.build import build
    from ingest.lake import Lake

    home = tmp_path / "warehouse"
    lake = Lake(home)
    lake.init()
    lake.write("corpora", "mini", [{"corpus_id": "c-mini", "name": "mini", "n_docs": 10}])
    items = _closeness_items(seed=3)
    t0 = datetime(2026, 12, 1, 8, 0, tzinfo=timezone.utc)
    emb = {"ps-a": '{"name": "lsa"}', "ps-b": '{"name": "hf", "path": "/m"}'}
    rows = []
    for k, r in enumerate(items):
        rows.append({**r, "corpus_id": "c-mini" if r["prompt_set"] == "ps-a" else "c-gone", "source": "s",
                     "text": f"text {k}", "n_tokens": 12, "selection_score": None, "embedder": emb[r["prompt_set"]],
                     "n_reference_docs": 500 if r["prompt_set"] == "ps-a" else 40, "reference_seed": 42,
                     "created_at": t0.replace(minute=k % 50)})
    lake.write("prompt_closeness", "set-a", [r for r in rows if r["prompt_set"] == "ps-a"])
    lake.write("prompt_closeness", "set-b", [r for r in rows if r["prompt_set"] == "ps-b"])
    result = build(home, vars_=f"{{propme_bootstrap_resamples: {B_DBT}}}", progress=False,
                   select=["+fct_prompt_closeness"], full_tests=True)
    assert result.success, result.failures

    from ingest.home import db_path

    with duckdb.connect(str(db_path(home)), read_only=True) as con:
        cur = con.execute("select * from fct_prompt_closeness")
        names = [d[0] for d in cur.description]
        got = {(r["prompt_set"], r["item_group"]): r for r in (dict(zip(names, x)) for x in cur.fetchall())}
    want = _oracle(items, B_DBT, 42, 0.95)
    assert set(got) == set(want)
    order = {"generic": 1, "candidate": 2, "specific": 3, "training_sentence": 4}
    for (pset, g), w in want.items():
        r = got[(pset, g)]
        for col, v in w.items():
            assert _close(r[col], v), (pset, g, col, r[col], v)
        assert r["closer_than_generic"] == (w["diff_ci_low"] is not None and w["diff_ci_low"] > 0)
        assert r["group_order"] == order[g]
        mine = [x for x in rows if x["prompt_set"] == pset]
        assert r["corpus_id"] == mine[0]["corpus_id"]
        assert r["corpus_name"] == ("mini" if pset == "ps-a" else None)  # a corpus no longer registered
        assert r["embedder"] == emb[pset]
        assert r["n_reference_docs"] == mine[0]["n_reference_docs"] and r["reference_seed"] == 42
        assert r["evaluated_at"] == max(x["created_at"] for x in mine)
        assert (r["n_resamples"], r["seed"], r["ci_level"]) == (B_DBT, 42, 0.95)
    assert got[("ps-a", "specific")]["closer_than_generic"] is True
    assert got[("ps-a", "generic")]["closer_than_generic"] is False


# -- end to end: `lmaudit prompts specific` on a real index ----------------------------------------------

N_SPECIFIC = 9
TRAINING_DOCS = 15


def _norm(s: str) -> str:
    return " ".join(s.split())


@pytest.fixture(scope="module")
def prose(tmp_path_factory) -> dict:
    """A real infini-gram index of prose (the even pydoc topics, BPE trained on them), registered as corpus
    `prose`; a generic file of everyday sentences of 19-21 index tokens; a candidate file with the odd topics
    in two sources, a source `tiny` with one short document, a source `mirror` whose one document is a
    sentence copied from a training document, and a source `wrapped` whose one document is a training sentence
    copied with its line break (the leakage filter must drop both)."""
    from conftest import byte_level_bpe

    from ingest.corpora import open_corpus, register_corpus
    from ingest.index import build_index
    from ingest.lake import Lake
    from ingest.prompts.specific.pipeline import _is_language

    root = tmp_path_factory.mktemp("specific")
    train, held = _pydoc_split()
    (root / "corpus").mkdir()
    (root / "corpus" / "docs.jsonl").write_text("".join(json.dumps({"text": t, "id": f"t{i}"}) + "\n"
                                                        for i, t in enumerate(train)))
    byte_level_bpe(train, 1000).save(str(root / "tokenizer.json"))
    build_index([root / "corpus"], str(root / "tokenizer.json"), root / "index", progress=False)
    home = root / "warehouse"
    lake = Lake(home)
    lake.init()
    register_corpus(lake, "prose", [root / "index"])
    corpus = open_corpus(lake, "prose")
    n_tok = lambda s: len(corpus.tokenizer.encode(s))  # noqa: E731
    en = _is_language("en")

    repo = Path(__file__).resolve().parents[2]
    generic = [ln.strip() for ln in (repo / "ingest" / "data" / "generic_en.txt").read_text().splitlines()
               if ln.strip() and 19 <= n_tok(ln.strip()) <= 21]
    assert len(generic) >= 10
    (root / "generic.txt").write_text("\n".join(generic) + "\n")

    def twenties(text: str) -> list[str]:  # prose sentences of 20 tokens (they fit any generic length)
        return [s for s in C.split_sentences(text) if n_tok(s) == 20 and en(s)
                and sum(w.lower() in {"the", "of", "a", "to", "is", "and", "in"} for w in s.split()) >= 2]

    # a sentence that is in a training document byte for byte, and one that is there across a line break
    planted = next(s for t in train for s in twenties(t) if s in t)
    wrapped, raw = next((s, m.group(0)) for t in train for s in twenties(t) if not any(s in u for u in train)
                        for m in [re.search(r"\s+".join(map(re.escape, s.split())), t)] if m and "\n" in m.group(0))
    j = next(i for i, t in enumerate(held) if twenties(t))
    tiny = twenties(held[j])[0]
    cands = [{"text": planted, "source": "mirror", "id": "m1"}, {"text": tiny, "source": "tiny", "id": "tiny1"},
             {"text": raw, "source": "wrapped", "id": "w1"}]
    cands += [{"text": t, "source": "topics-a" if i % 2 == 0 else "topics-b", "id": f"h{i}"}
              for i, t in enumerate(held) if i != j]
    (root / "cands.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cands))
    return {"root": root, "home": home, "train": train, "generic": generic, "planted": planted, "tiny": tiny,
            "wrapped": wrapped, "wrapped_raw": raw, "cands": root / "cands.jsonl", "tokens": n_tok}


def _lmaudit(args: list[str], capsys) -> tuple[int, str, str]:
    from ingest.cli.main import run

    capsys.readouterr()
    rc = run(args)
    out = capsys.readouterr()
    return rc, out.out, out.err


def _lake_digest(home: Path) -> dict[str, str]:
    return {str(p.relative_to(home / "lake")): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted((home / "lake").rglob("*")) if p.is_file() and "_tmp" not in p.parts}


@pytest.fixture(scope="module")
def specific_run(prose) -> dict:
    """One real `lmaudit prompts specific` (in this process; capsys is per test, so output is captured here)."""
    import contextlib
    import io

    from ingest.cli.main import run
    from ingest.lake import Lake

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = run(["-w", str(prose["home"]), "prompts", "specific", "--corpus", "prose",
                  "--candidates", str(prose["cands"]), "--match-file", str(prose["root"] / "generic.txt"),
                  "--n", str(N_SPECIFIC), "--training-docs", str(TRAINING_DOCS)])
    lake = Lake(prose["home"])
    return {"rc": rc, "out": out.getvalue(), "err": err.getvalue(),
            "prompts": lake.read("prompts").to_pylist(), "closeness": lake.read("prompt_closeness").to_pylist()}


@pytest.mark.slow
def test_specific_end_to_end_prompts_and_leakage(prose, specific_run) -> None:
    r = specific_run
    assert r["rc"] == 0, (r["out"], r["err"])
    assert "specific:" in r["out"] and "closeness to the training data" in r["out"], r["out"]
    rows = r["prompts"]
    assert rows and {x["setting"] for x in rows} == {"specific"}
    assert len({x["prompt_set"] for x in rows}) == 1
    assert len({x["prompt_id"] for x in rows}) == len(rows)
    kept = [x for x in rows if x["leakage_outcome"] == "kept"]
    dropped = [x for x in rows if x["leakage_outcome"] == "dropped"]
    assert len(kept) == N_SPECIFIC and len(kept) + len(dropped) == len(rows)
    assert all(x["leakage_reason"] is None for x in kept)
    # the sentence copied from the training corpus is dropped, with a reason, and keeps its source
    planted = [x for x in rows if x["text"] == prose["planted"]]
    assert len(planted) == 1 and planted[0]["leakage_outcome"] == "dropped", planted
    assert planted[0]["leakage_reason"] and planted[0]["source"] == "mirror" and planted[0]["source_doc"] == "m1"
    # the oracle of the leakage filter (PropMe's rule): no kept prompt is inside a training document as it is
    train = [_norm(t) for t in prose["train"]]
    for x in kept:
        assert not any(x["text"] in t for t in prose["train"]), x["text"]
        assert x["token_ids"] and len(x["token_ids"]) == prose["tokens"](x["text"])
        assert x["language"] == "en" and x["source"] in {"tiny", "topics-a", "topics-b", "wrapped"}
    for x in dropped:  # and every dropped one is (no false alarm)
        assert x["leakage_reason"] and any(_norm(x["text"]) in t for t in train), x


@pytest.mark.slow
def test_specific_end_to_end_selection_and_closeness(prose, specific_run) -> None:
    r = specific_run
    assert r["rc"] == 0, r["err"]
    kept = [x for x in r["prompts"] if x["leakage_outcome"] == "kept"]
    close = r["closeness"]
    assert {x["item_group"] for x in close} == {"generic", "candidate", "specific", "training_sentence"}
    assert {x["prompt_set"] for x in close} == {kept[0]["prompt_set"]}
    by_group = defaultdict(list)
    for x in close:
        by_group[x["item_group"]].append(x)
    cand, spec = by_group["candidate"], by_group["specific"]
    # the specific group is the kept prompt set, a subset of the candidates
    assert sorted(x["text"] for x in spec) == sorted(x["text"] for x in kept)
    assert {x["text"] for x in spec} <= {x["text"] for x in cand}
    assert prose["planted"] not in {x["text"] for x in cand}  # after the leakage filter
    # equal shares across sources: the brute-force allocation of N over the candidates per source
    available = Counter(x["source"] for x in cand)
    assert available["tiny"] == 1 and "mirror" not in available and available["wrapped"] <= 1
    assert Counter(x["source"] for x in kept) == {s: q for s, q in fair_shares(dict(available), N_SPECIFIC).items()
                                                  if q}
    # within each source, the kept ones have the highest selection scores
    for s in available:
        scores = sorted((x["selection_score"] for x in cand if x["source"] == s), reverse=True)
        mine = sorted((x["selection_score"] for x in spec if x["source"] == s), reverse=True)
        assert mine == scores[:len(mine)]
    # selection scores are length adjusted: their mean per length is zero
    per_len = defaultdict(list)
    for x in cand:
        per_len[x["n_tokens"]].append(x["selection_score"])
    assert all(abs(np.mean(v)) < 1e-9 for v in per_len.values())
    # lengths: every candidate within tolerance of a generic length (19..21), counted in index tokens
    for x in cand + spec + by_group["training_sentence"]:
        assert x["n_tokens"] == prose["tokens"](x["text"])
        assert any(abs(x["n_tokens"] - g) <= C.length_tolerance(g) for g in (19, 20, 21)), x
    # the generic group is the match file (none of it is in the training corpus); training sentences are real
    generic = [x["text"] for x in by_group["generic"]]
    assert len(generic) == len(set(generic)) == min(N_SPECIFIC, len(prose["generic"]))
    assert set(generic) <= set(prose["generic"])
    train = [_norm(t) for t in prose["train"]]
    assert by_group["training_sentence"]
    for x in by_group["training_sentence"]:
        assert any(_norm(x["text"]) in t for t in train), x["text"]
    for x in close:
        assert -1 - 1e-9 <= x["similarity"] <= 1 + 1e-9
        assert x["n_reference_docs"] == TRAINING_DOCS and x["reference_seed"] == 42
        assert json.loads(x["embedder"])["name"] == "lsa"
        assert (x["selection_score"] is None) == (x["item_group"] in ("generic", "training_sentence"))
    assert len({x["closeness_id"] for x in close}) == len(close)
    # the paper's finding holds here too: the selected sentences are closer to the training data than generic
    mean = {g: float(np.mean([x["similarity"] for x in v])) for g, v in by_group.items()}
    assert mean["specific"] > mean["generic"], mean


@pytest.mark.slow
def test_specific_end_to_end_a_hard_wrapped_copy(prose, specific_run) -> None:
    """split_sentences joins a candidate's lines with spaces, so a sentence copied from a training document
    across a line break is only caught by a whitespace-insensitive comparison: PropMe's rule (the default)
    keeps it, the `strict` rule drops it."""
    from ingest.corpora import open_corpus
    from ingest.lake import Lake
    from ingest.prompts.settings import leakage_reason

    assert specific_run["rc"] == 0, specific_run["err"]
    rows = [x for x in specific_run["prompts"] if x["text"] == prose["wrapped"]]
    assert prose["wrapped_raw"] in "".join(prose["train"])  # the candidate document is training text, verbatim
    assert len(rows) <= 1 and all(x["leakage_outcome"] == "kept" for x in rows), rows
    corpus = open_corpus(Lake(prose["home"]), "prose")
    assert leakage_reason(corpus, prose["wrapped"]) is None
    assert leakage_reason(corpus, prose["wrapped"], "strict") == \
        "inside a retrieved document after normalization (strict rule)"


BAD = [  # (name, extra arguments or replacements, a substring of the one error line)
    ("missing candidate file", {"--candidates": "{root}/nothere.jsonl"}, "not found"),
    ("non-JSON line", {"--candidates": "{root}/bad_json.jsonl"}, "line 2: not valid JSON"),
    ("duplicate ids", {"--candidates": "{root}/dup.jsonl"}, "appears twice"),
    ("unknown embedder", {"--embedder": "nope"}, "unknown embedder 'nope'"),
    ("hf quality without its folder", {"--quality": "hf", "--quality-param": "path={root}/no_model"},
     "quality model folder"),
    ("n below 1", {"--n": "0"}, "at least 1"),
]


@pytest.mark.slow
def test_specific_bad_inputs_are_one_line_and_change_nothing(prose, specific_run, capsys) -> None:
    root = prose["root"]
    (root / "bad_json.jsonl").write_text('{"text": "A fine line."}\n{"text": oops}\n')
    (root / "dup.jsonl").write_text('{"text": "One.", "id": "a"}\n{"text": "Two.", "id": "a"}\n')
    before = _lake_digest(prose["home"])
    for name, changes, message in BAD:
        opts = {"--corpus": "prose", "--candidates": str(prose["cands"]), "--match-file": str(root / "generic.txt"),
                "--n": str(N_SPECIFIC), "--training-docs": str(TRAINING_DOCS)}
        opts.update({k: v.format(root=root) for k, v in changes.items()})
        rc, out, err = _lmaudit(["-w", str(prose["home"]), "prompts", "specific",
                                 *itertools.chain.from_iterable(opts.items())], capsys)
        lines = err.strip().splitlines()
        assert rc == 2, (name, rc, err)
        assert "Traceback" not in out + err, name
        assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], (name, err)
        assert _lake_digest(prose["home"]) == before, name
