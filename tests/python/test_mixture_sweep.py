"""`lmaudit mixture sweep` / `inject` (issue 26 items 4-5): the grid and its bad inputs, a sweep on a tiny
in-memory reference set whose domains share no word (so the classifier is exact and `cc` must equal the
hand-counted share of every first-n sample), resuming, and the report's Tables 3/4/9 on a hand-built mart."""

from __future__ import annotations

import json
import random
from pathlib import Path

import duckdb
import pytest

from ingest.errors import UserError
from ingest.importers.generations import import_generations
from ingest.lake import Lake, make_key
from ingest.mixture.inject import default_study, make_plan, parse_shares
from ingest.mixture.sweep import (TABLE, Axis, Sampler, SweepSpec, classes_of, parse_axis, parse_grid, run_sweep,
                                  truth_for)
from ingest.references import import_references

from conftest import run_cli

# ------------------------------------------------------------------------------------------- grid parsing


def test_axes_parse_to_typed_values() -> None:
    assert parse_axis("reference=100, 1000") == Axis("reference", ("100", "1000"))
    assert parse_axis("temperature=0.70,1") == Axis("temperature", ("0.7", "1"))
    assert parse_axis("backend=tfidf,transformer").values == ("tfidf", "transformer")
    assert parse_axis("granularity=fine,a+b/c").values == ("fine", "a+b/c")
    grid = parse_grid(["reference=10,20", "generations=5"])
    spec = SweepSpec("s", grid)
    pts = [(p.axis, p.value, p.config.per_domain, p.config.n_generations) for p in spec.points()]
    assert pts == [("reference", "10", 10, None), ("reference", "20", 20, None), ("generations", "5", None, 5)]


@pytest.mark.parametrize("axes, needle", [
    ([], "empty grid"),
    (["colour=1"], "unknown axis 'colour'"),
    (["reference"], "NAME=V1,V2"),
    (["reference="], "empty value"),
    (["reference=10,,20"], "empty value"),
    (["reference=1"], "below 2"),
    (["reference=ten"], "not a whole number"),
    (["generations=0"], "below 1"),
    (["temperature=0"], "not a number > 0"),
    (["temperature=nan"], "not a number > 0"),
    (["temperature=0.7,0.70"], "given twice"),
    (["backend=bert"], "unknown backend 'bert'"),
    (["backend=transformer:/no/such/folder"], "is not a model folder"),
    (["granularity=a+/b"], "bad group"),
    (["granularity=a+b/b+c"], "two groups"),
    (["reference=10", "reference=20"], "given twice"),
])
def test_bad_grids_are_one_user_error(axes, needle) -> None:
    with pytest.raises(UserError, match=needle):
        parse_grid(axes)


def test_granularity_classes_and_summed_truth() -> None:
    classes = classes_of(["a", "b", "c", "d"], "a+c/b")
    assert classes == [("a+c", ("a", "c")), ("b", ("b",)), ("d", ("d",))]
    # documented 0.1/0.2/0.3/0.4 plus a domain the classifier lacks (dropped, the rest renormalised)
    truth = truth_for({"a": 0.1, "b": 0.2, "c": 0.3, "d": 0.4, "x": 1.0}, classes)
    assert truth == pytest.approx([0.4, 0.2, 0.4])
    assert truth_for(None, classes) == [None, None, None]
    # as fct_mixture_evaluation: aliases merge documented names; too much weight outside the classes -> no truth
    two = classes_of(["Web", "Code"], "fine")
    assert truth_for({"CommonCrawl": 0.3, "C4": 0.3, "Code": 0.36, "Books": 0.04}, two,
                     {"CommonCrawl": "Web", "C4": "Web"}, 0.05) == pytest.approx([0.6 / 0.96, 0.36 / 0.96])
    assert truth_for({"Web": 0.5, "Code": 0.4, "Books": 0.1}, two, {}, 0.05) == [None, None]
    with pytest.raises(UserError, match="unknown domain"):
        classes_of(["a", "b"], "a+z")
    with pytest.raises(UserError, match="at least 2"):
        classes_of(["a", "b"], "a+b")


def test_injection_plan_and_its_bad_inputs() -> None:
    assert parse_shares("0.1,0,0.05") == (0.0, 0.05, 0.1)
    for bad, needle in [("0.1", "at least two"), ("0,1", "outside"), ("0,-0.1", "outside"), ("0,x", "not a number"),
                        ("0.1,0.10", "twice")]:
        with pytest.raises(UserError, match=needle):
            parse_shares(bad)
    plan = make_plan("headers", (0.0, 0.1), None, "tiny", None, 0)
    # equal base over the three other domains, scaled by 1 - share: 0.9 / 3 = 0.3 each
    assert plan.mixture_spec(0.1) == "boilerplate=0.3,code=0.3,documentation=0.3,headers=0.1"
    assert default_study(plan) == "inject-headers-420steps"  # tiny's own budget; another budget, another study
    assert default_study(make_plan("headers", (0.0, 0.1), None, "tiny", 1200, 0)) == "inject-headers-1200steps"
    # another seed, size or base mixture is another study too: Table 9 never mixes their models
    names = {default_study(make_plan("headers", (0.0, 0.1), b, sz, 1200, sd))
             for b, sz, sd in [(None, "tiny", 0), (None, "tiny", 1), (None, "small", 0),
                               ("code=2,boilerplate=1,documentation=1", "tiny", 0)]}
    assert len(names) == 4
    assert default_study(make_plan("headers", (0.0, 0.1), "code=1,boilerplate=1,documentation=1", "tiny", 1200, 0)) \
        == "inject-headers-1200steps"  # equal weights given explicitly: the default study
    plan = make_plan("code", (0.0, 0.2), "documentation=3,boilerplate=1", "tiny", None, 0)
    assert plan.mixture_spec(0.2) == "boilerplate=0.2,code=0.2,documentation=0.6"
    with pytest.raises(UserError, match="not a sandbox domain"):
        make_plan("toxic", (0.0, 0.1), None, "tiny", None, 0)
    with pytest.raises(UserError, match="names the injected domain"):
        make_plan("code", (0.0, 0.1), "code=1,headers=1", "tiny", None, 0)
    with pytest.raises(UserError, match="round to the same sandbox"):
        make_plan("code", (0.01, 0.012), None, "tiny", None, 0)


def test_cli_bad_input_is_one_line_exit_2(home: Path) -> None:
    # one subprocess (a few seconds each on busy cores); the library tests above cover the other messages
    for args, needle in [(["mixture", "sweep", "--run", "r", "--axis", "backend=bert"], "unknown backend")]:
        proc = run_cli(*args, home=home)
        assert proc.returncode == 2, proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error:") and needle in lines[0], proc.stderr
    assert not Lake(home).partitions(TABLE)


# ------------------------------------------------------------------------- a sweep on a tiny reference set

VOCAB = {"alpha": [f"al{i}x" for i in range(40)], "beta": [f"be{i}q" for i in range(40)],
         "gamma": [f"ga{i}z" for i in range(40)]}
# the run's 20 samples, in sample order: first 10 = 5 alpha, 3 beta, 2 gamma; all 20 = 8 / 7 / 5
SAMPLE_DOMAINS = ["alpha", "beta", "alpha", "gamma", "alpha", "beta", "alpha", "gamma", "beta", "alpha",
                  "beta", "beta", "alpha", "gamma", "beta", "beta", "alpha", "gamma", "gamma", "alpha"]


def _text(rng: random.Random, domain: str) -> str:
    return " ".join(rng.choice(VOCAB[domain]) for _ in range(30))


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    home = tmp_path_factory.mktemp("sweep") / "warehouse"
    lake = Lake(home)
    lake.init()
    rng = random.Random(0)
    ref = home.parent / "ref.jsonl"
    ref.write_text("".join(json.dumps({"id": f"{d}-{i}", "domain": d, "text": _text(rng, d)}) + "\n"
                           for d in VOCAB for i in range(20)))
    import_references(lake, ref, folds=5, source="toy")
    gen = home.parent / "gen.jsonl"
    gen.write_text("".join(json.dumps({"prompt": "", "sample_idx": k, "text": _text(rng, d)}) + "\n"
                           for k, d in enumerate(SAMPLE_DOMAINS)))
    import_generations(lake, gen, run_id="toy-run", model="/m/toy/model", setting="unconditional", purpose="mixture")
    lake.write("mixtures_documented", "toy", [
        {"mixture_id": make_key("/m/toy/model", d), "model": "/m/toy/model", "domain": d, "weight": w,
         "source": "hand"} for d, w in (("alpha", 0.5), ("beta", 0.3), ("gamma", 0.2))])
    spec = SweepSpec("toy", parse_grid(["reference=5,10", "generations=10,20", "granularity=alpha+beta/gamma"]),
                     estimators=("cc", "direct", "pacc"))
    sampler = Sampler(model="/m/toy/model", run_id="toy-run")
    first = run_sweep(lake, spec, sampler, progress=False)
    return lake, spec, sampler, first


def _rows(lake: Lake, **where) -> list[dict]:
    return [r for r in lake.read(TABLE).to_pylist() if all(r[k] == v for k, v in where.items())]


def test_every_point_is_written_with_the_hand_counted_shares(swept) -> None:
    lake, spec, _, first = swept
    assert [(p.axis, p.value) for p in first.computed] == [("reference", "5"), ("reference", "10"),
                                                          ("generations", "10"), ("generations", "20"),
                                                          ("granularity", "alpha+beta/gamma")]
    assert len(lake.read(TABLE)) == (4 * 3 + 2) * 3  # four 3-domain points and one 2-class point, 3 estimators
    cc = {r["domain"]: r["estimate"] for r in _rows(lake, axis="generations", value="10", estimator="cc")}
    assert cc == pytest.approx({"alpha": 0.5, "beta": 0.3, "gamma": 0.2})
    cc = {r["domain"]: r["estimate"] for r in _rows(lake, axis="generations", value="20", estimator="cc")}
    assert cc == pytest.approx({"alpha": 0.4, "beta": 0.35, "gamma": 0.25})
    merged = {r["domain"]: (r["estimate"], r["truth"])
              for r in _rows(lake, axis="granularity", estimator="cc")}
    assert merged == {"alpha+beta": pytest.approx((0.75, 0.8)), "gamma": pytest.approx((0.25, 0.2))}
    # the classifier is exact on disjoint vocabularies: the corrected estimate agrees with counting
    pacc = {r["domain"]: r["estimate"] for r in _rows(lake, axis="generations", value="20", estimator="pacc")}
    assert pacc == pytest.approx({"alpha": 0.4, "beta": 0.35, "gamma": 0.25}, abs=0.02)
    ref5 = _rows(lake, axis="reference", value="5")
    assert {r["n_reference"] for r in ref5} == {15} and {r["n_generations"] for r in ref5} == {20}
    assert [r["truth"] for r in ref5 if r["domain"] == "beta"] == pytest.approx([0.3] * 3)
    assert {r["run_id"] for r in ref5} == {"toy-run"} and {r["backend"] for r in ref5} == {"tfidf"}


def test_a_rerun_resumes_and_replaces_only_missing_or_changed_points(swept) -> None:
    lake, spec, sampler, _ = swept
    before = sorted((r["sweep_row_id"], r["created_at"]) for r in lake.read(TABLE).to_pylist())
    again = run_sweep(lake, spec, sampler, progress=False)
    assert again.computed == [] and len(again.skipped) == 5
    assert sorted((r["sweep_row_id"], r["created_at"]) for r in lake.read(TABLE).to_pylist()) == before
    # a killed sweep: one point's partition is missing -> only that point runs again, no duplicate rows
    part = next(p for p in lake.partitions(TABLE) if "generations--10" in p)
    lake.delete(TABLE, part)
    resumed = run_sweep(lake, spec, sampler, progress=False)
    assert [(p.axis, p.value) for p in resumed.computed] == [("generations", "10")]
    assert len(lake.read(TABLE)) == len(before)


def test_sweep_data_checks_before_any_work(swept) -> None:
    lake, _, sampler, _ = swept
    for axes, needle in [(["reference=50"], "has only 20 reference documents"),
                         (["reference=3"], "fewer documents than the 5"),
                         (["generations=21"], "has only 20 samples"),
                         (["granularity=alpha+delta"], "unknown domain"),
                         (["temperature=0.5"], "give --corpus")]:
        with pytest.raises(UserError, match=needle):
            run_sweep(lake, SweepSpec("bad", parse_grid(axes)), sampler, progress=False)
    assert not [p for p in lake.partitions(TABLE) if "bad" in p]


def test_model_aliases_give_the_truth_and_a_new_resume_key(swept) -> None:
    """var mixture_model_aliases pairs a run with a documented mixture filed under another name in
    fct_mixture_evaluation; a sweep, which stores its truth, ignored it and wrote rows without one."""
    from ingest.mixture.sweep import changed_truth_vars, documented_truth

    lake, _, _, _ = swept
    import_generations(lake, lake.home.parent / "gen.jsonl", run_id="aliased-run", model="/srv/ckpt-7",
                       setting="unconditional", purpose="mixture")
    aliases = {"mixture_model_aliases": {"/srv/ckpt-7": "/M/TOY/MODEL"}}  # the documented name, any case
    assert documented_truth(lake, "/srv/ckpt-7") == (None, None)
    assert documented_truth(lake, "/srv/ckpt-7", aliases["mixture_model_aliases"])[0] == \
        {"alpha": 0.5, "beta": 0.3, "gamma": 0.2}
    assert changed_truth_vars(None) == {} and changed_truth_vars({"mixture_model_aliases": {}}) == {}
    assert changed_truth_vars(aliases) == aliases
    spec = SweepSpec("aliased", parse_grid(["generations=10"]), estimators=("cc",))
    sampler = Sampler(model="/srv/ckpt-7", run_id="aliased-run")
    run_sweep(lake, spec, sampler, progress=False)
    assert {r["truth"] for r in _rows(lake, study="aliased")} == {None}
    again = run_sweep(lake, spec, sampler, progress=False, vars_=aliases)
    assert len(again.computed) == 1  # other truth vars: the point is computed again, not taken as done
    truth = {r["domain"]: r["truth"] for r in _rows(lake, study="aliased")}
    assert truth == pytest.approx({"alpha": 0.5, "beta": 0.3, "gamma": 0.2})


# ---------------------------------------------------------------------------- the report's Tables 3, 4, 9

def _mart():
    con = duckdb.connect()
    con.execute("""create table fct_mixture_sweeps as select * from (values
        ('s', '/w/a/model', 'reference', '1000', 1000.0, 'pacc', 0.90, null, null, null, null),
        ('s', '/w/a/model', 'reference', '100', 100.0, 'pacc', 0.80, null, null, null, null),
        ('s', '/w/b/model', 'reference', '100', 100.0, 'pacc', 0.70, null, null, null, null),
        ('s', '/w/a/model', 'backend', 'tfidf', null, 'pacc', 0.85, null, null, null, null),
        ('s', '/w/a/model', 'backend', 'tfidf', null, 'direct', 0.10, null, null, null, null),
        ('i', '/w/inj10/model', 'inject', '0.1', 0.1, 'pacc', 0.95, 'headers', 0.10, 0.12, 0.98),
        ('i', '/w/inj0/model', 'inject', '0', 0.0, 'pacc', 0.97, 'headers', 0.0, 0.01, 0.99)
    ) as t(study, model, axis, value, value_num, estimator, overlap_accuracy, target_domain, target_truth,
           target_estimate, target_accuracy)""")
    return con


def test_ablation_tables_have_the_papers_shape(tmp_path: Path) -> None:
    from ingest.report.tables import injection_figure, sweep_table, sweep_tables_html, table9

    models, rows = sweep_table(_mart(), "reference")
    assert models == ["a", "b"]
    assert rows == [("100", {"a": 80.0, "b": 70.0}), ("1000", {"a": 90.0})]  # numeric order, not text order
    assert table9(_mart()) == [("inj0 (i)", "headers", 0.0, 1.0, 99.0), ("inj10 (i)", "headers", 10.0, 12.0, 98.0)]
    page = sweep_tables_html(_mart())
    assert page.index("Table 3") < page.index("Table 4") < page.index("Table 9") and "<td>85.0</td>" in page
    assert "not available" in sweep_tables_html(duckdb.connect())
    assert injection_figure(_mart(), tmp_path / "f.png") and (tmp_path / "f.png").stat().st_size > 1000
