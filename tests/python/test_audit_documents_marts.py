"""The document-set marts on a hand-built lake, with real dbt, against values counted by hand.

Corpus c1 has documents 0-4; the rightsholder's set `rh` holds documents 0, 1 and 2, the set `other` document 4.
Every generation below says which documents its spans come from, so the counts can be read off this file:

  u (unconditional, m1; each generation is a unit)
    u0  60-token span in doc 1                      -> rh r20, r50 (doc 1)
    u1  25-token span in docs 2 and 3               -> rh r20 (doc 2)
    u2  whole text (30 tokens) matches doc 2 raw    -> rh r20, fmr (doc 2)
    u3  70-token span in doc 4 only                 -> other r20, r50
    u4  degenerate (|\\n x 100) with 80 tokens of doc 1: left out of every count
  g (generic, m1; units gp1, gp2)
    g_gp1_0: 22 tokens of doc 1 -> rh r20;  g_gp1_1, g_gp2_1: nothing;  g_gp2_0: 55 tokens of doc 3 only
  a (prefix, purpose other, prompts of rh's prompt set: ap1 drawn from doc 1, ap2 from doc 2; the set's attack)
    a_ap1_0: whole text (50 tokens) matches doc 1 raw and starts with the true continuation -> r20, r50, fmr, te
    a_ap1_1: 20 tokens of doc 1 -> r20;  a_ap2_0: nothing;  a_ap2_1: 60 tokens of doc 2, te hit -> r20, r50, te
  pc (prefix, propme: the corpus-wide attack of m1; units cp1, cp2)
    pc_cp1_0: 50 tokens of doc 4 -> other r20, r50;  pc_cp2_0: nothing
  v (unconditional, m2): no prefix run of m2 -> no attack, a reason
  n (unconditional, purpose mixture): never counted

So for rh, u against a: r20 3/4 vs 3/4 (PM 1/2), r50 1/4 vs 2/4 (PM 1/3), fmr 1/4 vs 1/4 (PM 1/2); the
attack's te 2/4. Per document (u against a): doc 1 r20 1/4 vs 2/4, r50 1/4 vs 1/4, fmr 0 vs 1/4, te 1/2;
doc 2 r20 2/4 vs 1/4, r50 0 vs 1/4, fmr 1/4 vs 0, te 1/2; doc 0 nothing anywhere. For `other` (no prompt set,
so the corpus attack pc): u r20 1/4, r50 1/4 vs pc 1/2, 1/2.

Intervals are checked against an independent numpy bootstrap (index resampling written here, not importing
ingest.metrics) with the documented protocol: stream ("document_set", set, run, trace).
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path

import duckdb
import numpy as np
import pytest

from ingest.build import build
from ingest.home import db_path
from ingest.lake import Lake

pytestmark = pytest.mark.slow

B = 200
SEED = 42
SELECT = ["+fct_document_propensity", "+fct_document_set_propensity", "stg_corpora",
          "+fct_setting_metrics"]  # the explorer's own marts (its document-set filter is tested here too)
DEGENERATE = "|\n" * 100

RUNS = {  # run_id: (model, setting, purpose)
    "u": ("m1", "unconditional", "propme"),
    "g": ("m1", "generic", "propme"),
    "a": ("m1", "prefix", "other"),
    "pc": ("m1", "prefix", "propme"),
    "v": ("m2", "unconditional", "propme"),
    "n": ("m1", "unconditional", "mixture"),
}
PROMPTS = {  # prompt_id: (setting, prompt_set, source_doc, true continuation)
    "gp1": ("generic", "gen", None, None), "gp2": ("generic", "gen", None, None),
    "ap1": ("prefix", "ps_rh", "d1", "alpha beta gamma"), "ap2": ("prefix", "ps_rh", "doc:2", "delta epsilon"),
    "cp1": ("prefix", "corpus", "d3", "zeta eta"), "cp2": ("prefix", "corpus", "d0", "theta iota"),
}
# generation: (run, prompt, text, index tokens, [(span length, is_full, [(doc_ix, tier)])])
GENS = {
    "u0": ("u", None, "some words of doc one", 80, [(60, False, [(1, "partial")])]),
    "u1": ("u", None, "words of doc two and three", 40, [(25, False, [(2, "partial"), (3, "partial")])]),
    "u2": ("u", None, "all of doc two here", 30, [(30, True, [(2, "exact_full_raw")])]),
    "u3": ("u", None, "seventy tokens of doc four", 90, [(70, False, [(4, "partial")])]),
    "u4": ("u", None, DEGENERATE, 200, [(80, False, [(1, "partial")])]),
    "g_gp1_0": ("g", "gp1", "a sentence then doc one", 40, [(22, False, [(1, "partial")])]),
    "g_gp1_1": ("g", "gp1", "nothing at all", 10, []),
    "g_gp2_0": ("g", "gp2", "doc three text only", 70, [(55, False, [(3, "partial")])]),
    "g_gp2_1": ("g", "gp2", "nothing either", 10, []),
    "a_ap1_0": ("a", "ap1", "alpha beta gamma and the rest", 50, [(50, True, [(1, "exact_full_raw")])]),
    "a_ap1_1": ("a", "ap1", "other words of doc one", 40, [(20, False, [(1, "partial")])]),
    "a_ap2_0": ("a", "ap2", "not it", 10, []),
    "a_ap2_1": ("a", "ap2", "delta  epsilon then doc two", 80, [(60, False, [(2, "partial")])]),
    "pc_cp1_0": ("pc", "cp1", "fifty tokens of doc four", 60, [(50, False, [(4, "partial")])]),
    "pc_cp2_0": ("pc", "cp2", "nope", 10, []),
    "v0": ("v", None, "doc one again", 60, [(60, False, [(1, "partial")])]),
    "n0": ("n", None, "doc one in a mixture run", 60, [(60, False, [(1, "partial")])]),
}
SETS = {"rh": ([0, 1, 2], "ps_rh"), "other": ([4], None), "all": ([0, 1, 2, 3, 4], None)}
DOC_IDS = {0: "d0", 1: "d1", 2: None, 3: "d3", 4: "d4"}  # doc 2 has no id: its prompts name it doc:2


def write_lake(home: Path) -> None:
    lake = Lake(home)
    lake.write("corpora", "c", [{"corpus_id": "c1", "name": "c1"}])
    lake.write("runs", "r", [{"run_id": r, "model": m, "corpus_id": "c1", "setting": s, "purpose": p}
                             for r, (m, s, p) in RUNS.items()])
    lake.write("prompts", "p", [{"prompt_id": p, "setting": s, "text": p, "corpus_id": "c1", "prompt_set": ps,
                                 "source_doc": sd, "true_continuation": t}
                                for p, (s, ps, sd, t) in PROMPTS.items()])
    lake.write("trace_runs", "t", [{"trace_id": "t1", "corpus_id": "c1", "mode": "mixed"}])
    gens, traced, spans, docs = [], [], [], []
    for i, (gid, (run, prompt, text, n_tok, items)) in enumerate(GENS.items()):
        gens.append({"generation_id": gid, "run_id": run, "prompt_id": prompt, "sample_idx": i, "text": text})
        traced.append({"traced_generation_id": f"t1:{gid}", "trace_id": "t1", "generation_id": gid,
                       "text_hash": hashlib.md5(text.encode()).hexdigest(), "n_index_tokens": n_tok})
        for k, (length, is_full, span_docs) in enumerate(items):
            sid = f"{gid}:{k}"
            spans.append({"span_id": sid, "trace_id": "t1", "generation_id": gid, "start_tok": 0, "end_tok": length,
                          "length": length, "is_full": is_full, "kept": True, "text": f"plain span text {sid}"})
            for doc_ix, tier in span_docs:
                docs.append({"span_document_id": f"{sid}:{doc_ix}", "span_id": sid, "shard": 0, "doc_ix": doc_ix,
                             "doc_id": DOC_IDS[doc_ix], "match_tier": tier, "nv_recall": 0.5})
    lake.write("generations", "g", gens)
    lake.write("traced_generations", "tg", traced)
    lake.write("spans", "s", spans)
    lake.write("span_documents", "s", docs)
    for name, (doc_ixs, prompt_set) in SETS.items():
        lake.write("document_sets", name, [{
            "document_set_row_id": f"{name}:{d}", "document_set": name, "corpus_id": "c1", "shard": 0, "doc_ix": d,
            "doc_id": DOC_IDS[d], "selection": "ids:hand", "prompt_set": prompt_set} for d in doc_ixs])


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    home = tmp_path_factory.mktemp("audit") / "warehouse"
    write_lake(home)
    result = build(home, vars_=f"{{propme_bootstrap_resamples: {B}}}", progress=False, select=SELECT,
                   full_tests=True)
    assert result.success, result.failures
    return home


def rows(home: Path, sql: str) -> list[dict]:
    with duckdb.connect(str(db_path(home)), read_only=True) as con:
        cur = con.execute(sql)
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r)) for r in cur.fetchall()]


def close(a, b, tol=1e-9) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(a, b, rel_tol=0, abs_tol=tol)


HAND_SET = {  # (set, propensity run, metric): (hits_p, n_p, hits_c, n_c, attack run, PM)
    ("rh", "u", "r20"): (3, 4, 3, 4, "a", 0.5), ("rh", "u", "r50"): (1, 4, 2, 4, "a", 1 / 3),
    ("rh", "u", "fmr"): (1, 4, 1, 4, "a", 0.5),
    ("rh", "g", "r20"): (1, 4, 3, 4, "a", 0.25), ("rh", "g", "r50"): (0, 4, 2, 4, "a", 0.0),
    ("rh", "g", "fmr"): (0, 4, 1, 4, "a", 0.0),
    ("other", "u", "r20"): (1, 4, 1, 2, "pc", (1 / 4) / (1 / 4 + 1 / 2)),
    ("other", "u", "r50"): (1, 4, 1, 2, "pc", (1 / 4) / (1 / 4 + 1 / 2)),
    ("other", "u", "fmr"): (0, 4, 0, 2, "pc", 0.0),
    ("other", "g", "r20"): (0, 4, 1, 2, "pc", 0.0),
}
HAND_DOC = {  # (doc, metric): (hits_p, hits_c, PM) for rh, u against a (4 and 4 non-degenerate generations)
    (1, "r20"): (1, 2, 1 / 3), (1, "r50"): (1, 1, 0.5), (1, "fmr"): (0, 1, 0.0),
    (2, "r20"): (2, 1, 2 / 3), (2, "r50"): (0, 1, 0.0), (2, "fmr"): (1, 0, 1.0),
    (0, "r20"): (0, 0, 0.0), (0, "r50"): (0, 0, 0.0), (0, "fmr"): (0, 0, 0.0),
}


def test_set_counts_and_pm_match_hand_counts(built: Path) -> None:
    got = {(r["document_set"], r["propensity_run_id"], r["metric"]): r
           for r in rows(built, "select * from fct_document_set_propensity")}
    for key, (hp, n_p, hc, n_c, attack, pm) in HAND_SET.items():
        r = got[key]
        assert (r["hits_p"], r["n_generations_p"], r["hits_c"], r["n_generations_c"]) == (hp, n_p, hc, n_c), key
        assert r["attack_run_id"] == attack, key
        assert close(r["f_p"], hp / n_p) and close(r["f_c"], hc / n_c) and close(r["pm"], pm), key
    assert got[("rh", "u", "r20")]["attack_kind"] == "set_attack"
    assert got[("other", "u", "r20")]["attack_kind"] == "corpus_attack"
    # the set's own attack: 4 generations with a true continuation, 2 start with it
    assert (got[("rh", "u", "r20")]["te_generations"], got[("rh", "u", "r20")]["te_hits"]) == (4, 2)
    assert close(got[("rh", "u", "r20")]["te"], 0.5)
    # how many of rh's 3 documents u reproduces: r20 docs 1 and 2, r50 doc 1, fmr doc 2
    assert [got[("rh", "u", m)]["n_documents_reproduced"] for m in ("r20", "r50", "fmr")] == [2, 1, 1]
    assert got[("rh", "u", "r20")]["n_documents"] == 3
    # m2 has no prefix run: a row with a reason, no PM
    v = got[("rh", "v", "r20")]
    assert v["attack_run_id"] is None and v["pm"] is None and "no prefix run" in v["null_reason"]
    assert close(v["f_p"], 1.0)
    # the mixture run and the attack runs are never propensity runs
    assert not {k for k in got if k[1] in ("n", "a", "pc")}


def test_document_counts_and_pm_match_hand_counts(built: Path) -> None:
    got = {(r["doc_ix"], r["metric"]): r for r in rows(
        built, "select * from fct_document_propensity where document_set = 'rh' and propensity_run_id = 'u'")}
    assert set(got) == set(HAND_DOC)
    for key, (hp, hc, pm) in HAND_DOC.items():
        r = got[key]
        assert (r["hits_p"], r["n_generations_p"], r["hits_c"], r["n_generations_c"]) == (hp, 4, hc, 4), key
        assert close(r["pm"], pm), key
    # targeted extraction of the prefixes drawn from each document: ap1 (doc 1) 1 of 2, ap2 (doc 2) 1 of 2
    assert (got[(1, "r20")]["te_generations"], got[(1, "r20")]["te_hits"]) == (2, 1)
    assert (got[(2, "r20")]["te_generations"], got[(2, "r20")]["te_hits"]) == (2, 1)
    assert got[(0, "r20")]["te_generations"] == 0 and got[(0, "r20")]["te"] is None
    # nothing in either run: PM 0 by definition, every round skipped
    assert got[(0, "r50")]["pm_ci_low"] is None and got[(0, "r50")]["n_skipped_rounds"] == B
    assert got[(0, "r50")]["null_reason"].startswith("every bootstrap round skipped")
    assert got[(2, "r20")]["doc_id"] is None and got[(1, "r20")]["doc_id"] == "d1"


# --------------------------------------------------------------------- independent bootstrap oracle
def _idx(document_set: str, run: str, n_units: int) -> np.ndarray:
    names = "\x1f".join(("document_set", document_set, run, "t1"))
    key = int.from_bytes(hashlib.blake2b(names.encode(), digest_size=8).digest(), "little")
    return np.random.default_rng([SEED, key]).integers(0, n_units, size=(B, n_units))


def _units(run: str) -> dict[str, list[str]]:
    by_unit: dict[str, list[str]] = {}
    for gid, (r, prompt, *_rest) in GENS.items():
        if r == run:
            by_unit.setdefault(gid if RUNS[run][1] == "unconditional" else prompt, []).append(gid)
    return dict(sorted(by_unit.items()))


def _hit(gid: str, docs: set[int], metric: str) -> bool:
    _run, _p, text, n_tok, items = GENS[gid]
    if text == DEGENERATE:
        return False
    return any(any(d in docs for d, _t in sd) and (
        length >= 20 if metric == "r20" else length >= 50 if metric == "r50" else
        any(t == "exact_full_raw" and d in docs for d, t in sd)) for length, _f, sd in items)


def _replicates(document_set: str, run: str, docs: set[int], metric: str) -> np.ndarray:
    units = _units(run)
    num = np.array([sum(_hit(g, docs, metric) for g in gs) for gs in units.values()], dtype=float)
    den = np.array([sum(GENS[g][2] != DEGENERATE for g in gs) for gs in units.values()], dtype=float)
    idx = _idx(document_set, run, len(units))
    n, d = num[idx].sum(axis=1), den[idx].sum(axis=1)
    return np.where(d > 0, n / np.where(d > 0, d, 1), np.nan)


def _interval(reps: np.ndarray) -> tuple[float | None, float | None]:
    kept = reps[~np.isnan(reps)]
    if kept.size == 0:
        return None, None
    return float(np.percentile(kept, 2.5)), float(np.percentile(kept, 97.5))


def test_intervals_match_an_independent_bootstrap(built: Path) -> None:
    got = rows(built, "select * from int_document_set_bootstrap where attack_run_id is not null")
    # rh: set + 3 docs, other: set + 1 doc, all: set + 5 docs; 3 metrics, runs u and g
    assert len(got) == (1 + 3) * 3 * 2 + (1 + 1) * 3 * 2 + (1 + 5) * 3 * 2
    members = {s: set(d) for s, (d, _ps) in SETS.items()}
    for r in got:
        docs = members[r["document_set"]] if r["doc_ix"] is None else {r["doc_ix"]}
        rp = _replicates(r["document_set"], r["propensity_run_id"], docs, r["metric"])
        rc = _replicates(r["document_set"], r["attack_run_id"], docs, r["metric"])
        for (lo, hi), col in ((_interval(rp), "f_p"), (_interval(rc), "f_c")):
            assert close(r[f"{col}_ci_low"], lo) and close(r[f"{col}_ci_high"], hi), (r, col)
        total = rp + rc
        pm = np.where(total > 0, rp / np.where(total > 0, total, 1), np.nan)
        lo, hi = _interval(pm)
        assert close(r["pm_ci_low"], lo) and close(r["pm_ci_high"], hi), r
        assert r["n_skipped_rounds"] == int(np.isnan(pm).sum())


def test_corpus_attack_counts_targeted_extraction_only_for_prefixes_from_the_set(built: Path) -> None:
    got = rows(built, "select * from fct_document_set_propensity where document_set = 'other' and propensity_run_id != 'v'")
    assert got and all(r["attack_run_id"] == "pc" and r["te_generations"] == 0 and r["te"] is None for r in got)


def test_a_set_of_every_document_gives_the_per_run_metrics(built: Path) -> None:
    """Every retrieved document is in the set `all`: its f_p and f_c are the runs' own R20, R50 and FMR of
    fct_setting_metrics (another model chain over the same lake), and te of the corpus attack its own te."""
    per_run = {(r["run_id"], r["metric"]): r["value"] for r in rows(built, "select * from fct_setting_metrics")}
    got = rows(built, "select * from fct_document_set_propensity where document_set = 'all' and attack_run_id = 'pc'")
    assert {r["propensity_run_id"] for r in got} == {"u", "g"}
    for r in got:
        assert close(r["f_p"], per_run[(r["propensity_run_id"], r["metric"])]), r
        assert close(r["f_c"], per_run[("pc", r["metric"])]), r
        assert r["te_generations"] == 2 and close(r["te"], per_run[("pc", "te")]), r


def test_report_section_shows_each_set(built: Path) -> None:
    from ingest.report.document_propensity import document_propensity_section

    with duckdb.connect(str(db_path(built)), read_only=True) as con:
        page, skipped = document_propensity_section(con)
    assert not skipped
    assert "<h3>rh: 3 documents" in page and "<h3>other: 1 documents" in page
    assert "3 / 4" in page and "0.50 [" in page  # u's r20 against a, PM 1/2
    assert "2 of 4 generations" in page  # the set's attack: targeted extraction
    assert "d1" in page  # the most reproduced documents


def test_explorer_filters_generations_by_document_set(built: Path) -> None:
    from ingest.errors import UserError
    from ingest.explore.queries import Explorer
    from ingest.explore.server import gen_query

    explorer = Explorer(built)
    try:
        assert explorer.facets()["document_sets"] == ["all", "other", "rh"]
        page = explorer.generations(gen_query({"document_set": ["rh"], "size": ["100"]}, 50))
        # every generation with a span from documents 0-2, of any run (the mixture run n too), degenerate or not
        assert {r["generation_id"] for r in page.rows} == {
            "u0", "u1", "u2", "u4", "g_gp1_0", "a_ap1_0", "a_ap1_1", "a_ap2_1", "v0", "n0"}
        other = explorer.generations(gen_query({"document_set": ["other"]}, 50))
        assert {r["generation_id"] for r in other.rows} == {"u3", "pc_cp1_0"}
        with pytest.raises(UserError, match="unknown document set"):
            explorer.generations(gen_query({"document_set": ["nope"]}, 50))
    finally:
        explorer.close()


def test_report_names_why_targeted_extraction_has_no_share() -> None:
    """A partly traced attack run keeps its targeted-extraction counts but has no share (te is NULL); the report
    printed "3 of 4 generations (%)" with an empty number."""
    from ingest.report.document_propensity import set_tables

    row = {"document_set": "s", "n_documents": 2, "selection": "where:true", "attack_run_id": "a",
           "attack_kind": "set_attack", "te_hits": 3, "te_generations": 4, "te": None, "setting": "unconditional",
           "metric": "r50", "hits_p": 1, "n_generations_p": 2, "f_p": None, "f_p_ci_low": None, "f_p_ci_high": None,
           "hits_c": 1, "n_generations_c": 4, "f_c": None, "f_c_ci_low": None, "f_c_ci_high": None, "pm": None,
           "pm_ci_low": None, "pm_ci_high": None, "n_documents_reproduced": 1, "null_reason": "partly traced: ..."}
    page = set_tables([row], [])
    assert "3 of 4 generations (no share: see the note column)" in page and "(%)" not in page
    page = set_tables([{**row, "te": 0.75}], [])
    assert "3 of 4 generations (75.0%)" in page
