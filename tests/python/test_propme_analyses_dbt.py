"""PropMe's further analyses (cumulative filters, independent differences, chance level, targeted extraction by
source duplication) on the hand-built lake of test_metrics_dbt plus traced prompts, with real dbt, against an
independent computation: the definitions of
docs/propme-analyses.md applied straight to the lake spec, and a numpy bootstrap (index resampling with
the documented seed protocol). Everything must agree to 1e-9."""

from __future__ import annotations

from pathlib import Path

import hashlib
import re

import numpy as np
import pytest
from test_metrics_dbt import (
    B,
    GENS,
    PROMPTS,
    RUNS,
    Gen,
    _interval,
    _is_loop,
    _replicates,
    _rng,
    close,
    generation_facts,
    rows,
    setting_replicates,
    write_lake,
)

from ingest.build import build
from ingest.lake import Lake

pytestmark = pytest.mark.slow

MODELS = ["+fct_cumulative_filters", "+fct_independent_run_differences", "+fct_chance_level", "+fct_source_duplication",
          "+fct_long_match_categories", "stg_corpora"]
# traced prompts (lmaudit trace --prompts): id -> (text it was traced from, [(span length, is_full, count)])
PROMPT_TRACES = {
    "prompt:p1": ("p1", [(3, False, 50)]),
    "prompt:p2": ("p2", [(25, False, 2), (4, False, 9)]),
    "prompt:p3": ("an older text", [(40, False, 1)]),  # stale: the prompt's text changed since
    "prompt:g1": ("g1", [(4, False, 7)]),
    "source:p1": ("p1" + PROMPTS["p1"][1], [(100, True, 1)]),
    "source:p2": ("p2" + PROMPTS["p2"][1], [(100, True, 40), (30, False, 90)]),
    "source:p3": ("p3" + PROMPTS["p3"][1], [(100, True, 250)]),
    "source:p4": ("p4" + PROMPTS["p4"][1], [(60, False, 3)]),  # does not occur whole
}
BUCKETS = {"p1": "once", "p2": "10-99", "p3": "100+", "p4": "not_found_whole"}
METRICS = ("fmr", "nvr", "r50")


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    home = tmp_path_factory.mktemp("analyses") / "warehouse"
    write_lake(home)
    traced, spans = [], []
    for gid, (text, ss) in PROMPT_TRACES.items():
        traced.append({"traced_generation_id": f"t1:{gid}", "trace_id": "t1", "generation_id": gid,
                       "text_hash": hashlib.md5(text.encode()).hexdigest(), "n_index_tokens": 100})
        for k, (length, is_full, count) in enumerate(ss):
            spans.append({"span_id": f"{gid}:{k}", "trace_id": "t1", "generation_id": gid, "start_tok": 0,
                          "end_tok": length, "length": length, "count": count, "is_full": is_full, "kept": True,
                          "text": text})
    lake = Lake(home)
    lake.write("traced_generations", "prompts", traced)
    lake.write("spans", "prompts", spans)
    result = build(home, vars_=f"{{propme_bootstrap_resamples: {B}}}", progress=False, select=MODELS, full_tests=True)
    assert result.success, result.failures
    return home


def cumulative_units(run_id: str, step: int) -> tuple[list[str], dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Units (sorted) and numerator / denominator per metric after the paper's filters 1..step (none, + short
    matches, + code, + duplicated text < 10 copies, + not unique), from the definitions of
    docs/propme-analyses.md: degenerate generations and loop spans are out at every step."""
    prompt_free = RUNS[run_id][2] in ("unconditional", "minimal_cue")
    by_unit: dict[str, list[Gen]] = {}
    for g in GENS[run_id]:
        if g.trace is not None:
            by_unit.setdefault(g.gid if prompt_free or g.prompt is None else g.prompt, []).append(g)
    units = sorted(by_unit)
    num = {m: [] for m in METRICS}
    den = {m: [] for m in METRICS}
    for u in units:
        kept = [g for g in by_unit[u] if not g.degenerate and (step < 3 or not g.code_like)]
        acc = {m: [0.0, 0.0] for m in METRICS}
        for g in kept:
            f = generation_facts(g)
            dup_ok = (step < 4 or f["rare"]) and (step < 5 or f["once"])
            acc["fmr"][0] += float(f["fm_raw"] and (step < 2 or g.n_tokens >= 50) and dup_ok)
            acc["r50"][0] += float(f["longest_nl"] >= 50 and dup_ok)
            acc["fmr"][1] += 1
            acc["r50"][1] += 1
            acc["nvr"][0] += f["nv_sum"] if step < 2 else f["nv_long"]
            acc["nvr"][1] += f["nv_pairs"]
        for m in METRICS:
            num[m].append(acc[m][0])
            den[m].append(acc[m][1])
    return units, {m: np.array(v) for m, v in num.items()}, {m: np.array(v) for m, v in den.items()}


def steps_of(metric: str) -> range:
    return range(1, 4) if metric == "nvr" else range(1, 6)  # NVR has no duplication step


def cumulative_replicates(run_id: str, trace: str, step: int):
    units, num, den = cumulative_units(run_id, step)
    idx = _rng("setting", run_id, trace).integers(0, len(units), size=(B, len(units)))
    return {m: _replicates(num[m], den[m], idx) for m in METRICS}, num, den


def test_cumulative_filters_match_the_oracle(built: Path) -> None:
    got = {(r["run_id"], r["metric"], r["step"]): r for r in rows(built, "select * from fct_cumulative_filters")}
    assert not [k for k in got if k[1] == "nvr" and k[2] > 3]
    checked = 0
    for run_id in ("r_pre", "r2_pre", "r_unc", "r_gen", "r3_unc"):
        for step in range(1, 6):
            reps, num, den = cumulative_replicates(run_id, "t1", step)
            for m in METRICS:
                if step not in steps_of(m):
                    continue
                r = got[(run_id, m, step)]
                if den[m].sum() == 0:
                    assert r["value"] is None and r["null_reason"] == "no generation left after the filters"
                    continue
                value = num[m].sum() / den[m].sum()
                assert close(r["value"], value), (run_id, m, step, r["value"], value)
                if m != "nvr" and num[m].sum() == 0:
                    assert r["ci_low"] == 0 and r["ci_high"] == 0  # the paper's [0, 0]
                    assert close(r["upper_rule_of_three"], min(1.0, 3 / int((den[m] > 0).sum())))
                else:
                    low, high = _interval(reps[m])
                    assert close(r["ci_low"], low) and close(r["ci_high"], high), (run_id, m, step)
                    assert r["upper_rule_of_three"] is None
                checked += 1
    assert checked >= 60
    # hand values. r_pre (5 non-degenerate samples): full matches pre_p1_0 (60 tokens, first 50 seen once) and
    # pre_p3_0 (55, code-like, seen 5 times): FMR 2/5 at none and at short matches, 1/4 once code is out
    assert close(got[("r_pre", "fmr", 1)]["value"], 2 / 5) and close(got[("r_pre", "fmr", 2)]["value"], 2 / 5)
    assert close(got[("r_pre", "fmr", 3)]["value"], 1 / 4) and close(got[("r_pre", "fmr", 5)]["value"], 1 / 4)
    # r_unc: unc_0 (70 tokens, first 50 seen 12 times) and unc_3 (60, once) have a non-loop span of >= 50
    # tokens (unc_2's is a loop, never counted): R50 2/4, then 1/4 once duplicated text is out; NVR 2.9 / 5
    # over all pairs, 2.3 / 5 counting only documents of the >= 50-token non-loop spans
    assert close(got[("r_unc", "r50", 1)]["value"], 2 / 4) and close(got[("r_unc", "r50", 3)]["value"], 2 / 4)
    assert close(got[("r_unc", "r50", 4)]["value"], 1 / 4) and close(got[("r_unc", "r50", 5)]["value"], 1 / 4)
    assert close(got[("r_unc", "nvr", 1)]["value"], 2.9 / 5) and close(got[("r_unc", "nvr", 2)]["value"], 2.3 / 5)
    assert got[("r_unc", "fmr", 5)]["step_name"] == "duplicated_once"


def test_cumulative_filters_step_none_is_the_setting_metrics(built: Path) -> None:
    """Step 1 (none) is the headline metric: same value, same units, same interval as fct_setting_metrics."""
    got = rows(built, "select f.run_id, f.metric, f.value, f.ci_low, f.ci_high, f.n_units, f.upper_rule_of_three, "
                      "s.value as s_value, s.ci_low as s_low, s.ci_high as s_high, s.n_units as s_units, "
                      "s.upper_rule_of_three as s_rule from fct_cumulative_filters as f "
                      "inner join fct_setting_metrics as s on f.run_id = s.run_id and f.trace_id = s.trace_id "
                      "and f.metric = s.metric where f.step = 1 and f.value is not null")
    assert len(got) >= 12
    for r in got:
        for a, b in (("value", "s_value"), ("ci_low", "s_low"), ("ci_high", "s_high")):
            assert close(r[a], r[b]), (r["run_id"], r["metric"], a)
        assert r["n_units"] == r["s_units"] and (r["upper_rule_of_three"] is None) == (r["s_rule"] is None)


def test_cumulative_filter_propensity_matches_the_oracle(built: Path) -> None:
    got = {(r["run_id"], r["metric"], r["step"]): r for r in rows(built, "select * from fct_cumulative_filters")}
    for step in range(1, 6):
        cap, cap_num, cap_den = cumulative_replicates("r_pre", "t1", step)
        for run_id in ("r_unc", "r_gen"):
            reps, num, den = cumulative_replicates(run_id, "t1", step)
            for m in METRICS:
                if step not in steps_of(m):
                    continue
                r = got[(run_id, m, step)]
                assert r["capability_run_id"] == "r_pre"
                f_p, f_c = num[m].sum() / den[m].sum(), cap_num[m].sum() / cap_den[m].sum()
                assert close(r["f_c"], f_c) and close(r["pm"], 0.0 if f_p == 0 else f_p / (f_p + f_c))
                total = reps[m] + cap[m]
                pm_reps = np.where(total > 0, reps[m] / np.where(total > 0, total, 1), np.nan)
                if np.isnan(pm_reps).all():
                    assert r["pm_ci_low"] is None
                    continue
                low, high = _interval(pm_reps)
                assert close(r["pm_ci_low"], low) and close(r["pm_ci_high"], high), (run_id, m, step)
    assert got[("r_pre", "r50", 3)]["capability_run_id"] is None  # the capability run itself


def test_independent_differences_match_the_oracle(built: Path) -> None:
    got = rows(built, "select * from fct_independent_run_differences")
    assert {(r["run_a"], r["run_b"]) for r in got} == {("r3_unc", "r_unc")}  # r4_unc: another pass
    by_metric = {r["metric"]: r for r in got}
    reps_a, num_a, den_a = setting_replicates("r3_unc", "t1")
    reps_b, num_b, den_b = setting_replicates("r_unc", "t1")
    checked = 0
    for metric, r in by_metric.items():
        assert r["bootstrap"] == "independent" and r["n_generations_a"] == 3 and r["n_generations_b"] == 4
        if r["null_reason"] is not None:
            assert r["null_reason"].startswith("run_") or den_a[metric].sum() == 0 or den_b[metric].sum() == 0
            continue
        diff = num_a[metric].sum() / den_a[metric].sum() - num_b[metric].sum() / den_b[metric].sum()
        assert close(r["diff"], diff), metric
        low, high = _interval(reps_a[metric] - reps_b[metric])
        assert close(r["ci_low"], low) and close(r["ci_high"], high), metric
        assert r["significant"] == (low > 0 or high < 0)
        checked += 1
    assert checked >= 15
    # hand value: FMR of m3 = 0 (its whitespace-only output occurs in the corpus but a blank output never
    # matches, as in PropMe's code), of r_unc = 1/4
    assert close(by_metric["fmr"]["diff"], 0 - 1 / 4)


def test_chance_level_matches_the_oracle(built: Path) -> None:
    got = {r["run_id"]: r for r in rows(built, "select * from fct_chance_level")}
    assert set(got) == {"r_pre", "r2_pre", "r_gen", "r5_gen"}  # runs with prompts; the empty run has none
    for run_id in ("r_pre", "r2_pre", "r_gen"):
        prompts = sorted({g.prompt for g in GENS[run_id]})
        longest = {p: max(n for n, _, _ in PROMPT_TRACES[f"prompt:{p}"][1]) for p in prompts
                   if f"prompt:{p}" in PROMPT_TRACES and PROMPT_TRACES[f"prompt:{p}"][0] == p}
        r = got[run_id]
        assert r["n_prompts"] == len(prompts) and r["n_prompts_traced"] == len(longest)
        assert close(r["prompt_als"], sum(longest.values()) / len(longest))
        assert r["prompt_max_span"] == max(longest.values())
        assert close(r["prompt_r20"], sum(v >= 20 for v in longest.values()) / len(longest))
        _, num, den = setting_replicates(run_id, "t1")
        als = num["als"].sum() / den["als"].sum()
        assert close(r["run_als"], als) and close(r["prompt_als_share"], r["prompt_als"] / als)
        assert (r["null_reason"] is None) == (len(longest) == len(prompts))
    # hand values: r_pre used p1 (3), p2 (25), p3 (stale trace: not counted)
    assert close(got["r_pre"]["prompt_als"], 14.0) and got["r_pre"]["n_prompts_traced"] == 2
    assert got["r_pre"]["null_reason"].startswith("partly traced: 2 of 3 prompts")
    assert got["r5_gen"]["null_reason"].startswith("run not traced")


def test_source_duplication_matches_the_oracle(built: Path) -> None:
    got = {(r["run_id"], r["bucket"]): r for r in rows(built, "select * from fct_source_duplication")}
    for run_id in ("r_pre", "r2_pre"):
        prompts = sorted({g.prompt for g in GENS[run_id]})
        idx = _rng("setting", run_id, "t1").integers(0, len(prompts), size=(B, len(prompts)))
        hits = np.array([sum(generation_facts(g)["te"] for g in GENS[run_id] if g.prompt == p and not g.degenerate)
                         for p in prompts], dtype=float)
        ok = np.array([sum(1 for g in GENS[run_id] if g.prompt == p and not g.degenerate) for p in prompts], float)
        for bucket in sorted({BUCKETS[p] for p in prompts}):
            mask = np.array([BUCKETS[p] == bucket for p in prompts])
            r = got[(run_id, bucket)]
            assert r["n_prompts"] == mask.sum() and r["n_hits"] == hits[mask].sum() and r["n_eligible"] == ok[mask].sum()
            assert close(r["te"], hits[mask].sum() / ok[mask].sum())
            if hits[mask].sum() == 0:
                assert r["ci_low"] == 0 and r["ci_high"] == 0
                assert close(r["upper_rule_of_three"], min(1.0, 3 / mask.sum()))
            else:
                low, high = _interval(_replicates(hits * mask, ok * mask, idx))
                assert close(r["ci_low"], low) and close(r["ci_high"], high), (run_id, bucket)
    # hand values: r_pre reproduces p1's continuation in 1 of 2 samples (source once), p2's in its one
    # non-degenerate sample (40 copies), p3's never (250 copies)
    assert close(got[("r_pre", "once")]["te"], 0.5) and close(got[("r_pre", "10-99")]["te"], 1.0)
    assert close(got[("r_pre", "100+")]["te"], 0.0) and got[("r_pre", "100+")]["median_source_count"] == 250
    assert close(got[("r2_pre", "not_found_whole")]["te"], 1.0)


def test_report_shows_the_analyses(built: Path, tmp_path) -> None:
    from ingest.report.build import build_report

    report = build_report(built, tmp_path / "report")
    page = report.html.read_text()
    for name in ("cumulative_filters", "source_duplication", "chance_level"):
        assert name in report.images and report.images[name].stat().st_size > 0, report.skipped
    for title in ("Metrics: settings x metrics", "Propensity: models x settings", "Chance level", "What long matches are",
                  "Targeted extraction by duplication", "Differences between prompt-free runs", "Glossary"):
        assert title in page
    # the wide table's cell for r_pre FMR is fct_setting_metrics' value with its interval
    r = rows(built, "select value, ci_low, ci_high from fct_setting_metrics where run_id = 'r_pre' and metric = 'fmr'")[0]
    assert f"{r['value']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}]" in page
    # the source-duplication row of r_pre's once bucket: 1 of 2 samples
    assert "<td>once</td><td>1</td><td>1 / 2</td>" in page
    assert "<td>r50_lt10</td>" in page and "<td>chance level</td>" in page  # glossary: catalog + analyses


BOILERPLATE = re.compile(r"licen[cs]e|copyright|all rights reserved|permission is hereby granted|warranty|"
                         r"terms and conditions|redistribution|cookie|privacy policy|subscribe")


def test_long_match_categories_match_the_oracle(built: Path) -> None:
    got = {(r["run_id"], r["category"]): r for r in rows(built, "select * from fct_long_match_categories")}
    expected: dict[tuple[str, str], list[int]] = {}
    for run_id, gens in GENS.items():
        for g in gens:
            long = [s for s in g.spans if s.end - s.start >= 20]
            if g.trace is None or g.degenerate or not long:
                continue
            top = min(long, key=lambda s: (not s.is_full, -(s.end - s.start), s.start))
            text = g.text if top.is_full else top.text
            if _is_loop(text):  # every span here is >= 20 tokens, the loop test's minimum
                category = "other"
            elif BOILERPLATE.search(text.lower()):
                category = "licence_boilerplate"
            else:
                category = "code" if g.code_like else "prose"
            expected.setdefault((run_id, category), []).append(top.end - top.start)
    assert set(got) == set(expected)
    for key, lengths in expected.items():
        r = got[key]
        total = sum(len(v) for k, v in expected.items() if k[0] == key[0])
        assert r["n_generations"] == len(lengths) and r["max_length"] == max(lengths), key
        assert close(r["share_of_long_matches"], len(lengths) / total) and r["n_from_domain"] == 0
    # hand values: the unconditional run's long matches are a licence, a loop and a prose full match
    assert {k[1] for k in got if k[0] == "r_unc"} == {"licence_boilerplate", "other", "prose"}
    assert got[("r_pre", "code")]["n_full_matches"] == 1  # import os / print(x): code-like, a full match
