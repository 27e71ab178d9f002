"""The PropMe marts on a hand-built lake, with real dbt (`lmaudit build`), against known answers.

Three oracles:
- hand-computed values (fractions written out below) for the headline metrics of two runs;
- an independent Python computation of every metric straight from the lake spec below (not from any model);
- an independent numpy bootstrap (index resampling, no count matrices, not importing ingest.metrics) for
  every interval, PM interval and paired difference, with the documented seed protocol.
Everything must agree to 1e-9. The lake also has an empty run, a traced run without spans, an untraced
run and runs without a prefix counterpart: they must give rows with a NULL value and a reason.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field, replace
from pathlib import Path

import duckdb
import numpy as np
import pytest

from ingest.build import build, run_dbt
from ingest.home import db_path
from ingest.lake import Lake

pytestmark = pytest.mark.slow

B = 200  # resamples in these tests (the default var is 10,000)
SEED = 42
PROPME = ["+fct_setting_metrics", "+fct_propensity", "+fct_run_differences", "+fct_duplication",
          "int_prompt_traces",  # read by the analyses downstream of int_propme_params that the var tests re-run
          "+int_model_checkpoints",  # read by fct_propme_trajectory, also downstream of int_propme_params
          "stg_prompt_closeness",  # read by int_prompt_closeness_bootstrap, also downstream of int_propme_params
          "stg_corpora"]  # all PropMe models (stg_corpora: the staging relationship tests need it)
# downstream of int_propme_params but reading tables this lake does not build (document sets, provenance, explorer)
NOT_PROPME = ["--exclude", "path:models/intermediate/audit", "path:models/marts/audit",
              "path:models/intermediate/provenance", "path:models/marts/provenance", "path:models/intermediate/explore",
              "path:models/marts/explore"]
LOOP_TEXT = "I'm sorry. " * 5
LICENSE = ("Permission is hereby granted, free of charge, to any person obtaining a copy of this software and "
           "associated documentation files")


# ---------------------------------------------------------------------------------------------- the lake
@dataclass
class Span:
    start: int
    end: int
    docs: list[tuple[str, float]] = field(default_factory=list)  # (match tier, nv_recall)
    text: str = "plain words here"
    is_full: bool = False
    counts: tuple[int, int] | None = None  # (first50_count, whole_count)


@dataclass
class Gen:
    gid: str
    text: str
    n_tokens: int
    prompt: str | None = None
    spans: list[Span] = field(default_factory=list)
    degenerate: bool = False  # hand labels, checked against the text module
    code_like: bool = False
    trace: str | None = "t1"


def full(n: int, *docs: tuple[str, float], counts=None, text="plain words here") -> Span:
    return Span(0, n, list(docs), text=text, is_full=True, counts=counts)


RUNS = {  # run_id: (model, corpus, setting)
    "r_pre": ("m1", "c1", "prefix"),
    "r2_pre": ("m2", "c1", "prefix"),
    "r_unc": ("m1", "c1", "unconditional"),
    "r_gen": ("m1", "c1", "generic"),
    "r_spec_empty": ("m1", "c1", "specific"),
    "r3_unc": ("m3", "c1", "unconditional"),
    "r4_unc": ("m4", "c2", "unconditional"),
    "r5_gen": ("m5", "c3", "generic"),
}

PROMPTS = {  # prompt_id: (setting, true continuation)
    "p1": ("prefix", "the quick brown fox jumps"),
    "p2": ("prefix", "alpha beta gamma"),
    "p3": ("prefix", "lorem ipsum"),
    "p4": ("prefix", "zzz"),
    "g1": ("generic", None),
    "g2": ("generic", None),
}

GENS: dict[str, list[Gen]] = {
    "r_pre": [
        Gen("pre_p1_0", "the  quick brown\nfox jumps over it", 60, "p1",
            [full(60, ("exact_full_raw", 1.0), ("partial", 0.5), counts=(1, 1))]),
        Gen("pre_p1_1", "something else entirely here", 40, "p1",
            [Span(0, 25, [("partial", 0.2)], text=LOOP_TEXT), Span(20, 32, [("partial", 0.4)])]),
        Gen("pre_p2_0", "alpha beta gamma delta", 30, "p2", [full(30, ("exact_full_normalized", 0.9))]),
        Gen("pre_p2_1", "|\n" * 100, 200, "p2", [full(200, ("exact_full_raw", 1.0))], degenerate=True,
            code_like=True),
        Gen("pre_p3_0", "import os\nx = 1\nprint(x)\n", 55, "p3",
            [full(55, ("exact_full_raw", 0.8), counts=(5, 3))], code_like=True),
        Gen("pre_p3_1", "nothing matched", 10, "p3"),
    ],
    "r2_pre": [
        Gen("pre2_p1_0", "the quick brown fox", 20, "p1", [full(20, ("exact_full_raw", 1.0))]),
        Gen("pre2_p2_0", "alpha beta gamma", 15, "p2", [Span(0, 8, [("partial", 0.3)])]),
        Gen("pre2_p4_0", "zzz top", 12, "p4"),
    ],
    "r_unc": [
        Gen("unc_0", "a license text follows", 100, None,
            [Span(0, 70, [("partial", 0.7), ("partial", 0.6)], text=LICENSE, counts=(12, 1)),
             Span(60, 80, [("partial", 0.1)], text=LICENSE[:60])]),
        Gen("unc_1", "short words only", 50, None, [Span(0, 4)]),
        Gen("unc_2", "ab ab ab ab", 80, None,
            [Span(0, 55, [("partial", 0.5)], text="ab " * 30, counts=(2, 2)), Span(50, 60)]),
        Gen("unc_3", "the whole thing occurs", 60, None, [full(60, ("exact_full_raw", 1.0), counts=(1, 1))]),
    ],
    "r_gen": [
        Gen("gen_g1_0", "hello there", 30, "g1", [Span(0, 5, [("partial", 0.1)])]),
        Gen("gen_g1_1", "hello again", 30, "g1"),
        Gen("gen_g2_0", "a sentence that goes on", 30, "g2", [Span(0, 22, [("partial", 0.2)], text=LICENSE[:80])]),
        Gen("gen_g2_1", "more words", 30, "g2"),
    ],
    "r_spec_empty": [],
    "r3_unc": [
        Gen("m3_0", "words from m3", 20, None, [Span(0, 6, [("partial", 0.3)])]),
        Gen("m3_1", "other words", 20, None),
        # a whitespace-only output that occurs in the corpus: the tracer finds it, the metrics never count it
        Gen("m3_2", " \n ", 1, None, [full(1, ("exact_full_raw", 1.0), text=" \n ")]),
    ],
    "r4_unc": [Gen("m4_0", "nothing here", 20, None, trace="t2"), Gen("m4_1", "nor here", 20, None, trace="t2")],
    "r5_gen": [Gen("m5_0", "untraced one", 20, "g1", trace=None), Gen("m5_1", "untraced two", 20, "g2", trace=None)],
}


def write_lake(home: Path) -> None:
    lake = Lake(home)
    lake.write("corpora", "c", [{"corpus_id": c, "name": c} for c in ("c1", "c2", "c3")])
    lake.write("runs", "r", [{"run_id": r, "model": m, "corpus_id": c, "setting": s} for r, (m, c, s) in RUNS.items()])
    lake.write("prompts", "p", [{"prompt_id": p, "setting": s, "text": p, "corpus_id": "c1", "true_continuation": t}
                                for p, (s, t) in PROMPTS.items()])
    lake.write("trace_runs", "t", [{"trace_id": "t1", "corpus_id": "c1", "mode": "mixed"},
                                   {"trace_id": "t2", "corpus_id": "c2", "mode": "mixed"}])
    gens, spans, docs, counts, traced = [], [], [], [], []
    for run_id, items in GENS.items():
        for i, g in enumerate(items):
            # the model's own token count (n_tokens) is deliberately wrong: every length the metrics use comes
            # from the tracer's index tokenization (traced_generations.n_index_tokens)
            gens.append({"generation_id": g.gid, "run_id": run_id, "prompt_id": g.prompt, "sample_idx": i,
                         "text": g.text, "n_tokens": 1})
            if g.trace is not None:
                traced.append({"traced_generation_id": f"{g.trace}:{g.gid}", "trace_id": g.trace,
                               "generation_id": g.gid, "text_hash": hashlib.md5(g.text.encode()).hexdigest(),
                               "n_index_tokens": g.n_tokens})
            for s in g.spans:
                sid = f"{g.gid}:{s.start}-{s.end}"
                spans.append({"span_id": sid, "trace_id": g.trace, "generation_id": g.gid, "start_tok": s.start,
                              "end_tok": s.end, "length": s.end - s.start, "is_full": s.is_full, "kept": True,
                              "text": g.text if s.is_full else s.text})
                for k, (tier, nv) in enumerate(s.docs):
                    docs.append({"span_document_id": f"{sid}:{k}", "span_id": sid, "shard": 0, "doc_ix": k,
                                 "match_tier": tier, "nv_recall": nv})
                if s.counts:
                    counts.append({"span_id": sid, "first50_count": s.counts[0], "whole_count": s.counts[1]})
    lake.write("generations", "g", gens)
    lake.write("spans", "s", spans)
    lake.write("span_documents", "s", docs)
    lake.write("span_counts", "k", counts)
    lake.write("traced_generations", "tg", traced)


# --------------------------------------------------------------------------- independent metric oracle
def _is_loop(text: str) -> bool:
    """Brute-force loop check, written independently of ingest.metrics.text."""
    b = " ".join(text.split()).encode()
    n = len(b)
    return any(10 * sum(b[i] == b[i + p] for i in range(n - p)) >= 9 * (n - p) for p in range(1, min(200, n // 3) + 1))


def _span_text(g: Gen, s: Span) -> str:
    return g.text if s.is_full else s.text


def generation_facts(g: Gen, mid=20, long=50, rare=10, blank_outputs_match=False) -> dict:
    # PropMe's code strips each output before tracing: a blank output has no spans, and stays in the denominators
    spans = g.spans if blank_outputs_match or g.text.strip() else []
    g = replace(g, spans=spans)
    loops = [s for s in g.spans if s.end - s.start >= 20 and _is_loop(_span_text(g, s))]
    nonloop = [s for s in g.spans if s not in loops]
    longest_nl = max((s.end - s.start for s in nonloop), default=0)
    long_nl = [s for s in nonloop if s.end - s.start >= long]
    top = max(long_nl, key=lambda s: (s.end - s.start, -s.start), default=None)
    first50 = top.counts[0] if top is not None and top.counts else None
    pairs = [nv for s in g.spans for _, nv in s.docs]
    truth = PROMPTS[g.prompt][1] if g.prompt else None
    return {
        "fm_raw": any(t == "exact_full_raw" for s in g.spans for t, _ in s.docs),
        "fm_norm": any(t in ("exact_full_raw", "exact_full_normalized") for s in g.spans for t, _ in s.docs),
        "n_tokens": g.n_tokens,
        "longest": max((s.end - s.start for s in g.spans), default=0),
        "longest_nl": longest_nl,
        "nv_sum": sum(pairs), "nv_pairs": len(pairs),
        "nv_long": sum(nv for s in long_nl for _, nv in s.docs),
        "once": first50 == 1, "rare": first50 is not None and first50 < rare,
        "has_truth": truth is not None,
        "te": truth is not None and " ".join(g.text.split()).startswith(" ".join(truth.split())),
    }


def unit_table(run_id: str, mid=20, long=50) -> tuple[list[str], dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Units (sorted) and per-metric numerator / denominator vectors, from the definitions of docs/propme-method.md alone."""
    setting = RUNS[run_id][2]
    prompt_free = setting in ("unconditional", "minimal_cue")
    by_unit: dict[str, list[Gen]] = {}
    for g in GENS[run_id]:
        by_unit.setdefault(g.gid if prompt_free or g.prompt is None else g.prompt, []).append(g)
    units = sorted(by_unit)
    num: dict[str, list[float]] = {}
    den: dict[str, list[float]] = {}

    def add(metric, n, d):
        num.setdefault(metric, []).append(float(n))
        den.setdefault(metric, []).append(float(d))

    for u in units:
        gs = by_unit[u]
        ok = [g for g in gs if not g.degenerate]
        nl = [g for g in ok if not g.code_like]
        f = {g.gid: generation_facts(g, mid, long) for g in gs}
        for suffix, sel in (("", ok), ("_nl", nl)):
            add("fmr" + suffix, sum(f[g.gid]["fm_raw"] for g in sel), len(sel))
            add("fmr20" + suffix, sum(f[g.gid]["fm_raw"] and g.n_tokens >= mid for g in sel), len(sel))
            add("fmr50" + suffix, sum(f[g.gid]["fm_raw"] and g.n_tokens >= long for g in sel), len(sel))
            add("als" + suffix, sum(f[g.gid]["longest"] for g in sel), len(sel))
            add("nvr" + suffix, sum(f[g.gid]["nv_sum"] for g in sel), sum(f[g.gid]["nv_pairs"] for g in sel))
            add("nvr50" + suffix, sum(f[g.gid]["nv_long"] for g in sel), sum(f[g.gid]["nv_pairs"] for g in sel))
            add("r20" + suffix, sum(f[g.gid]["longest_nl"] >= mid for g in sel), len(sel))
            add("r50" + suffix, sum(f[g.gid]["longest_nl"] >= long for g in sel), len(sel))
        add("fmr_normalized", sum(f[g.gid]["fm_norm"] for g in ok), len(ok))
        add("r50_once", sum(f[g.gid]["longest_nl"] >= long and f[g.gid]["once"] for g in ok), len(ok))
        add("r50_lt10", sum(f[g.gid]["longest_nl"] >= long and f[g.gid]["rare"] for g in ok), len(ok))
        te_sel = [g for g in ok if f[g.gid]["has_truth"]]
        te_hits = sum(f[g.gid]["te"] for g in te_sel)
        add("te", te_hits, len(te_sel))
        add("degenerate_rate", len(gs) - len(ok), len(gs))
        add("code_like_rate", len(ok) - len(nl), len(ok))
        nonblank = [g for g in ok if g.text.strip()]
        add("fmr_nonblank", sum(f[g.gid]["fm_raw"] for g in nonblank), len(nonblank))
        add("blank_rate", sum(not g.text.strip() for g in gs), len(gs))
        if not prompt_free:
            fm20 = sum(f[g.gid]["fm_raw"] and g.n_tokens >= mid for g in ok)
            r50 = sum(f[g.gid]["longest_nl"] >= long for g in ok)
            add("te_any10", te_hits > 0, len(te_sel) > 0)
            add("fmr20_any10", fm20 > 0, len(ok) > 0)
            add("r50_any10", r50 > 0, len(ok) > 0)
            either = sum((f[g.gid]["fm_raw"] and g.n_tokens >= mid) or f[g.gid]["longest_nl"] >= long for g in ok)
            add("long_match_any10", either > 0, len(ok) > 0)
            add("fmr20_any10_mean", fm20, fm20 > 0)
            add("r50_any10_mean", r50, r50 > 0)
    return units, {k: np.array(v) for k, v in num.items()}, {k: np.array(v) for k, v in den.items()}


# ----------------------------------------------------------------------- independent bootstrap oracle
def _rng(*names: str, seed: int = SEED) -> np.random.Generator:
    key = int.from_bytes(hashlib.blake2b("\x1f".join(names).encode(), digest_size=8).digest(), "little")
    return np.random.default_rng([seed, key])


def _replicates(num: np.ndarray, den: np.ndarray, idx: np.ndarray) -> np.ndarray:
    n, d = num[idx].sum(axis=1), den[idx].sum(axis=1)
    return np.array([a / b if b > 0 else np.nan for a, b in zip(n, d)])


def _interval(reps: np.ndarray) -> tuple[float, float]:
    kept = reps[~np.isnan(reps)]
    return float(np.percentile(kept, 2.5)), float(np.percentile(kept, 97.5))


def setting_replicates(run_id: str, trace: str, seed: int = SEED, n_resamples: int = B, mid=20, long=50):
    units, num, den = unit_table(run_id, mid, long)
    idx = _rng("setting", run_id, trace, seed=seed).integers(0, len(units), size=(n_resamples, len(units)))
    return {m: _replicates(num[m], den[m], idx) for m in num}, num, den


# ------------------------------------------------------------------------------------------- helpers
def rows(home: Path, sql: str) -> list[dict]:
    with duckdb.connect(str(db_path(home)), read_only=True) as con:
        cur = con.execute(sql)
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r)) for r in cur.fetchall()]


def close(a, b, tol=1e-9) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(a, b, rel_tol=0, abs_tol=tol)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    home = tmp_path_factory.mktemp("propme") / "warehouse"
    write_lake(home)
    result = build(home, vars_=f"{{propme_bootstrap_resamples: {B}}}", progress=False, select=PROPME, full_tests=True)
    assert result.success, result.failures
    return home


# --------------------------------------------------------------------------------------------- tests
def test_hand_labels_match_the_text_checks() -> None:
    from ingest.metrics import text as T

    for items in GENS.values():
        for g in items:
            assert T.is_degenerate(g.text) == g.degenerate, g.gid
            assert T.is_code_like(g.text) == g.code_like, g.gid


def test_headline_metrics_match_hand_computed_values(built: Path) -> None:
    got = {(r["run_id"], r["metric"]): r["value"] for r in rows(built, "select * from fct_setting_metrics")}
    expected = {  # prefix run: 6 generations, one degenerate (excluded), one code-like
        ("r_pre", "fmr"): 2 / 5, ("r_pre", "fmr_normalized"): 3 / 5, ("r_pre", "fmr20"): 2 / 5,
        ("r_pre", "fmr50"): 2 / 5, ("r_pre", "als"): (60 + 25 + 30 + 55 + 0) / 5,
        ("r_pre", "nvr"): (1.0 + 0.5 + 0.2 + 0.4 + 0.9 + 0.8) / 6, ("r_pre", "nvr50"): (1.0 + 0.5 + 0.8) / 6,
        ("r_pre", "r20"): 3 / 5, ("r_pre", "r50"): 2 / 5, ("r_pre", "fmr_nl"): 1 / 4,
        ("r_pre", "als_nl"): 115 / 4, ("r_pre", "nvr_nl"): 3.0 / 5, ("r_pre", "r50_nl"): 1 / 4,
        ("r_pre", "r50_once"): 1 / 5, ("r_pre", "r50_lt10"): 2 / 5, ("r_pre", "te"): 2 / 5,
        ("r_pre", "te_any10"): 2 / 3, ("r_pre", "fmr20_any10"): 2 / 3, ("r_pre", "r50_any10"): 2 / 3,
        ("r_pre", "long_match_any10"): 2 / 3,
        ("r_pre", "fmr20_any10_mean"): 1.0, ("r_pre", "degenerate_rate"): 1 / 6, ("r_pre", "code_like_rate"): 1 / 5,
        # unconditional run: the 55-token loop span counts for ALS but not for R50 / NVR50
        ("r_unc", "fmr"): 1 / 4, ("r_unc", "als"): (70 + 4 + 55 + 60) / 4, ("r_unc", "nvr"): 2.9 / 5,
        ("r_unc", "nvr50"): 2.3 / 5, ("r_unc", "r20"): 2 / 4, ("r_unc", "r50"): 2 / 4,
        ("r_unc", "r50_once"): 1 / 4, ("r_unc", "r50_lt10"): 1 / 4,
        # one of three m3 outputs is whitespace that occurs in the corpus: never a match (FMR 0/3, ALS 6/3),
        # without blanks 0/2
        ("r3_unc", "fmr"): 0.0, ("r3_unc", "als"): 6 / 3, ("r3_unc", "fmr_nonblank"): 0.0,
        ("r3_unc", "blank_rate"): 1 / 3,
    }
    for key, value in expected.items():
        assert close(got[key], value), (key, got[key], value)


def test_every_metric_and_interval_matches_the_oracles(built: Path) -> None:
    got = rows(built, "select * from fct_setting_metrics where null_reason is null")
    by_key = {(r["run_id"], r["metric"]): r for r in got}
    checked = 0
    for run_id in ("r_pre", "r2_pre", "r_unc", "r_gen", "r3_unc"):
        reps, num, den = setting_replicates(run_id, "t1")
        for metric, rep in reps.items():
            if den[metric].sum() == 0:
                assert (run_id, metric) not in by_key
                continue
            r = by_key[(run_id, metric)]
            assert close(r["value"], num[metric].sum() / den[metric].sum()), (run_id, metric)
            assert r["n_units"] == int((den[metric] > 0).sum())
            assert r["n_resamples"] == B and r["bootstrap_seed"] == SEED
            if r["metric_kind"] == "proportion" and num[metric].sum() == 0:
                # the paper's [0, 0], the rule-of-three bound in its own column
                assert r["ci_method"] == "percentile_bootstrap" and r["ci_low"] == 0 and r["ci_high"] == 0
                assert close(r["upper_rule_of_three"], min(1.0, 3 / r["n_units"]))
            else:
                assert r["upper_rule_of_three"] is None
                low, high = _interval(rep)
                assert r["ci_method"] == "percentile_bootstrap"
                assert close(r["ci_low"], low) and close(r["ci_high"], high), (run_id, metric, r, low, high)
                assert r["n_skipped_resamples"] == int(np.isnan(rep).sum())
            checked += 1
    assert checked > 100


def test_null_rows_say_why(built: Path) -> None:
    got = {(r["run_id"], r["metric"]): r for r in rows(built, "select * from fct_setting_metrics")}
    n_metrics = rows(built, "select count(*) as n from int_metric_definitions")[0]["n"]
    assert len(got) == 8 * n_metrics  # one row per (run, metric), every run, every metric
    assert got[("r_spec_empty", "fmr")]["value"] is None
    assert got[("r_spec_empty", "fmr")]["null_reason"] == "empty run: no generations"
    # traced (corpus c2 has a tracing pass) but no spans: zero events -> [0, 0]; NVR has no pairs
    assert got[("r4_unc", "fmr")]["value"] == 0 and got[("r4_unc", "fmr")]["ci_high"] == 0
    assert close(got[("r4_unc", "fmr")]["upper_rule_of_three"], 1.0)  # 3 / n_units capped at 1 (n_units = 2)
    assert got[("r4_unc", "nvr")]["value"] is None and got[("r4_unc", "nvr")]["null_reason"] == "no retrieved documents"
    # untraced: trace metrics NULL, text-only metrics computed
    assert got[("r5_gen", "fmr")]["null_reason"] == "not traced: run lmaudit trace --run r5_gen"
    untraced_text_metric = got[("r5_gen", "degenerate_rate")]
    assert untraced_text_metric["value"] == 0 and untraced_text_metric["null_reason"] is None
    assert got[("r_unc", "r50_any10")]["null_reason"].startswith("prompt-free setting")
    assert got[("r_gen", "te")]["null_reason"] == "no prompt with a true continuation (not a prefix setting)"


def test_propensity_matches_the_oracle(built: Path) -> None:
    got = {(r["propensity_run_id"], r["metric"]): r for r in rows(built, "select * from fct_propensity")}
    pm_metrics = ["fmr", "fmr20", "fmr50", "nvr", "nvr50", "r20", "r50", "fmr_nl", "fmr50_nl", "nvr_nl", "r50_nl",
                  "r50_once", "r50_lt10"]
    cap, cap_num, cap_den = setting_replicates("r_pre", "t1")
    for run_id in ("r_unc", "r_gen"):
        reps, num, den = setting_replicates(run_id, "t1")
        for metric in pm_metrics:
            r = got[(run_id, metric)]
            assert r["capability_run_id"] == "r_pre" and r["null_reason"] is None, r
            f_p, f_c = num[metric].sum() / den[metric].sum(), cap_num[metric].sum() / cap_den[metric].sum()
            assert close(r["f_p"], f_p) and close(r["f_c"], f_c)
            assert close(r["pm"], 0.0 if f_p == 0 else f_p / (f_p + f_c))
            total = reps[metric] + cap[metric]
            pm_reps = np.where(total > 0, reps[metric] / np.where(total > 0, total, 1), np.nan)
            low, high = _interval(pm_reps)
            assert close(r["ci_low"], low) and close(r["ci_high"], high), (run_id, metric)
            assert r["n_skipped_rounds"] == int(np.isnan(pm_reps).sum())
            d_low, d_high = _interval(reps[metric] - cap[metric])
            assert close(r["diff"], f_p - f_c) and close(r["diff_ci_low"], d_low) and close(r["diff_ci_high"], d_high)
            assert r["diff_significant"] == (d_low > 0 or d_high < 0)
    # hand value: unconditional vs prefix FMR = (1/4) / (1/4 + 2/5)
    assert close(got[("r_unc", "fmr")]["pm"], (1 / 4) / (1 / 4 + 2 / 5))
    # no prefix run for m3 / m4 / m5; the empty run has no f_p
    assert got[("r3_unc", "fmr")]["capability_run_id"] is None
    assert got[("r3_unc", "fmr")]["null_reason"] == "no prefix run of the same model and corpus"
    assert got[("r3_unc", "fmr")]["pm"] is None
    assert got[("r4_unc", "nvr")]["null_reason"] == "no prefix run of the same model and corpus"
    assert got[("r_spec_empty", "fmr")]["null_reason"] == "f_p: empty run: no generations"


def test_paired_differences_match_the_oracle(built: Path) -> None:
    got = {r["metric"]: r for r in rows(built, "select * from fct_run_differences")}
    assert {r["run_a"] for r in got.values()} == {"r2_pre"} and {r["run_b"] for r in got.values()} == {"r_pre"}
    ua, num_a, den_a = unit_table("r2_pre")
    ub, num_b, den_b = unit_table("r_pre")
    shared = sorted(set(ua) & set(ub))
    assert shared == ["p1", "p2"]
    ia, ib = [ua.index(u) for u in shared], [ub.index(u) for u in shared]
    idx = _rng("difference", "r2_pre", "r_pre", "t1").integers(0, len(shared), size=(B, len(shared)))
    checked = 0
    for metric, r in got.items():
        na, da, nb, db = num_a[metric][ia], den_a[metric][ia], num_b[metric][ib], den_b[metric][ib]
        if r["null_reason"] is not None:
            assert da.sum() == 0 or db.sum() == 0 or r["null_reason"].startswith("run_"), (metric, r)
            continue
        assert r["n_shared_units"] == 2 and r["n_units_only_a"] == 1 and r["n_units_only_b"] == 1
        assert close(r["diff"], na.sum() / da.sum() - nb.sum() / db.sum())
        reps = _replicates(na, da, idx) - _replicates(nb, db, idx)
        low, high = _interval(reps)
        assert close(r["ci_low"], low) and close(r["ci_high"], high), metric
        assert r["significant"] == (low > 0 or high < 0)
        checked += 1
    assert checked >= 15
    # hand value on p1, p2: r2_pre FMR = 1/2 (one full match of two), r_pre FMR = 1/3 (p2_1 is degenerate)
    assert close(got["fmr"]["diff"], 1 / 2 - 1 / 3)


def test_duplication_and_generation_facts(built: Path) -> None:
    dup = {r["run_id"]: r for r in rows(built, "select * from fct_duplication")}
    assert dup["r_pre"]["n_long"] == 2 and dup["r_pre"]["n_once"] == 1 and dup["r_pre"]["n_rare"] == 1
    assert close(dup["r_pre"]["median_first50_count"], 3.0) and close(dup["r_pre"]["share_once"], 0.5)
    assert dup["r_unc"]["n_long"] == 2 and dup["r_unc"]["n_long_loops_only"] == 1
    assert dup["r_unc"]["n_frequent"] == 1 and close(dup["r_unc"]["share_whole_once"], 1.0)
    assert dup["r_spec_empty"]["null_reason"] == "empty run: no generations"
    assert dup["r4_unc"]["null_reason"].startswith("no generation with a non-loop span")
    facts = {r["generation_id"]: r for r in rows(built, "select * from int_generation_facts")}
    assert facts["pre_p1_1"]["longest_span"] == 25 and facts["pre_p1_1"]["longest_nonloop_span"] == 12
    assert facts["unc_2"]["long_spans_all_loops"] and facts["unc_2"]["duplication_bucket"] is None
    assert facts["unc_0"]["duplication_bucket"] == "frequent" and facts["pre_p3_0"]["duplication_bucket"] == "rare"
    assert facts["pre_p1_0"]["targeted_hit"] and facts["pre2_p1_0"]["targeted_hit"] is False
    assert facts["m5_0"]["trace_id"] is None and facts["m5_0"]["longest_span"] is None


def test_changing_a_var_recomputes_and_is_recorded(built: Path) -> None:
    before = {(r["run_id"], r["metric"]): r for r in rows(built, "select * from fct_setting_metrics")}
    # `run` (models only; `build` ran the tests already) of everything that reads a parameter
    res = run_dbt(built, ["run", "--select", "int_propme_params+", *NOT_PROPME, "--vars",
                          "{propme_bootstrap_resamples: 100, propme_bootstrap_seed: 7, propme_long_span_tokens: 30}"])
    assert res.exception is None and res.success, res
    after = {(r["run_id"], r["metric"]): r for r in rows(built, "select * from fct_setting_metrics")}
    r = after[("r_pre", "r50")]
    assert r["long_span_tokens"] == 30 and r["n_resamples"] == 100 and r["bootstrap_seed"] == 7
    assert '"long_span_tokens":30' in r["params"] and '"bootstrap_seed":7' in r["params"]
    assert close(r["value"], 3 / 5) and not close(before[("r_pre", "r50")]["value"], 3 / 5)  # p2_0's 30 tokens
    reps, _, _ = setting_replicates("r_pre", "t1", seed=7, n_resamples=100, long=30)
    assert close(r["ci_low"], _interval(reps["r50"])[0]) and close(r["ci_high"], _interval(reps["r50"])[1])


def test_empty_flag_runs_the_python_models_on_zero_rows(built: Path) -> None:
    res = run_dbt(built, ["run", "--empty", "--select", "int_propme_params+", *NOT_PROPME, "--vars",
                          f"{{propme_bootstrap_resamples: {B}}}"])
    assert res.exception is None and res.success, res
    assert rows(built, "select count(*) as n from int_setting_bootstrap")[0]["n"] == 0
