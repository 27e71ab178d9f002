"""Review of b265c11/a9df3ad (model folders recorded relative to the warehouse): cases the commit's own test
(test_moved_warehouse_model.py) leaves out.

1. A run recorded before model paths were relative resumes once (its model and fingerprint are re-recorded
   relative); the same command run again must resume as well, not refuse with "other parameters".
2. `mixture sweep --run` of a run whose model is inside the warehouse: its sweep partitions, rows and config
   key must not name the warehouse's place, or a moved warehouse recomputes every point and keeps both.
3. `ingest.home.model_key` and macros/model_key.sql agree on a recorded name with a trailing newline
   (Python's `$` matches before a final newline, RE2's does not), with a warehouse reached through a symlink,
   and on odd warehouse paths ($LMAUDIT_HOME with a trailing slash, quotes, regex metacharacters).
4. A run of another folder with the same tail is not resumed as this model's; a sweep's own run loads the
   model from this warehouse.
5. Two lake entries that read as one model: int_mixtures_documented summed the recipes, and
   fct_mixture_estimates failed its unique test on two tokenizer estimates (it built on 49b1641). Now one
   spelling wins (macro one_model_spelling).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest

from ingest.lake import Lake
from tests.python.test_moved_warehouse_model import echo_run


def test_a_legacy_run_resumes_again_after_it_was_re_recorded_relative(tmp_path: Path) -> None:
    old = tmp_path / "a" / "wh"
    (old / "models" / "lm").mkdir(parents=True)
    spec, units, _ = echo_run(Lake(old), old / "models" / "lm")
    (row,) = Lake(old).read("runs").to_pylist()
    legacy_fp = spec.fingerprint(units)  # as lmaudit recorded the run before: the absolute folder
    Lake(old).write("runs", "run--r", [{**row, "model": str(old / "models" / "lm"), "sampling_params": json.dumps(
        {**json.loads(row["sampling_params"]), "fingerprint": legacy_fp})}])
    new = tmp_path / "b" / "wh"
    new.parent.mkdir()
    shutil.move(str(old), str(new))
    _, _, moved = echo_run(Lake(new), new / "models" / "lm")  # resumes, re-recorded relative
    assert moved.n_chunks_skipped == 2 and Lake(new).read("runs").to_pylist()[0]["model"] == "models/lm"
    _, _, again = echo_run(Lake(new), new / "models" / "lm")  # the same command once more
    assert again.n_chunks_skipped == 2
    _, _, here = echo_run(Lake(new), new / "models" / "lm")
    assert here.n_chunks_skipped == 2


def test_model_key_agrees_with_the_macro_on_a_trailing_newline() -> None:
    from ingest.home import SANDBOX_MODEL, model_key

    recorded = "/w/old/sandbox/tiny-seed0/model\n"
    sql = "select coalesce(nullif(regexp_extract(?, ?, 1), ''), ?)"
    with duckdb.connect() as con:
        (got,) = con.execute(sql, [recorded, SANDBOX_MODEL.pattern, recorded]).fetchone()
    assert model_key(Path("/w/here"), recorded) == got


def test_a_sweep_of_a_run_inside_the_warehouse_resumes_after_a_move(tmp_path: Path) -> None:
    """`mixture sweep --run` of a run whose model lies in the warehouse (recorded relative) keys its points by
    the model as recorded, not by the folder's place now: after `mv`, the same sweep finds its points done
    and its rows do not name either place."""
    import random

    from conftest import run_cli

    from ingest.importers.generations import import_generations
    from ingest.mixture.sweep import TABLE
    from ingest.references import import_references

    vocab = {d: [f"{d[:2]}{i}x" for i in range(40)] for d in ("alpha", "beta", "gamma")}
    rng = random.Random(0)

    def text(d: str) -> str:
        return " ".join(rng.choice(vocab[d]) for _ in range(30))

    old = tmp_path / "a" / "wh"
    model = old / "sandbox" / "toy-seed0" / "model"
    model.mkdir(parents=True)
    lake = Lake(old)
    lake.init()
    ref = tmp_path / "ref.jsonl"
    ref.write_text("".join(json.dumps({"id": f"{d}-{i}", "domain": d, "text": text(d)}) + "\n"
                           for d in vocab for i in range(10)))
    import_references(lake, ref, folds=5, source="toy")
    gen = tmp_path / "gen.jsonl"
    gen.write_text("".join(json.dumps({"prompt": "", "sample_idx": k, "text": text(d)}) + "\n"
                           for k, d in enumerate(["alpha", "beta", "gamma"] * 4)))
    import_generations(lake, gen, run_id="toy-run", model=str(model), setting="unconditional", purpose="mixture")
    args = ("mixture", "sweep", "--run", "toy-run", "--axis", "reference=5", "--estimators", "cc")
    p = run_cli(*args, home=old)
    assert p.returncode == 0, p.stderr
    assert "1 computed" in p.stdout, p.stdout
    new = tmp_path / "b" / "wh"
    new.parent.mkdir()
    shutil.move(str(old), str(new))
    p = run_cli(*args, home=new)
    assert p.returncode == 0, p.stderr
    assert "0 computed, 1 done before" in p.stdout, p.stdout
    rows = Lake(new).read(TABLE).to_pylist()
    assert rows and {r["model"] for r in rows} == {"sandbox/toy-seed0/model"}


def test_a_sweeps_own_run_loads_the_model_from_this_warehouse(tmp_path: Path, monkeypatch) -> None:
    """A temperature point samples the model again: a run's relative key is loaded from the warehouse it lies
    in; a folder given by hand (--model, inject) as given, not swapped for this warehouse's namesake."""
    import ingest.generate.backends as backends
    import ingest.generate.runner as runner
    from ingest.mixture.sweep import Sampler

    home = tmp_path / "wh"
    (home / "sandbox" / "toy-seed0" / "model").mkdir(parents=True)
    loaded = []

    class Stop(Exception):
        pass

    def fake_backend(name, model, **kw):
        loaded.append(model)
        raise Stop

    monkeypatch.setattr(backends, "get_backend", fake_backend)
    monkeypatch.setattr(runner, "run_generation", lambda *a, **k: None)
    lake = Lake(home)
    lake.init()
    lake.write("prompts", "p", [{"prompt_id": "x", "corpus_id": __import__("ingest.corpora", fromlist=["x"])
                                 .corpus_id_for("c"), "setting": "unconditional"}])
    other = tmp_path / "other" / "wh" / "sandbox" / "toy-seed0" / "model"  # another warehouse's, given by hand
    other.mkdir(parents=True)
    for s in (Sampler(model="sandbox/toy-seed0/model", run_id="r", corpus="c"), Sampler(model=str(other), corpus="c")):
        try:
            s._generate(lake, "sweep-r", 0.5, 4, False)
        except Stop:
            pass
    assert loaded == [str(home / "sandbox" / "toy-seed0" / "model"), str(other)]


def test_a_run_of_another_folder_with_the_same_tail_is_not_resumed_as_this_models(tmp_path: Path) -> None:
    """Run `r` was recorded (the old way, absolute) for a model folder outside the warehouse that still
    exists, `<elsewhere>/models/lm`. Generating run `r` of the warehouse's own `models/lm` (another model with
    the same tail) must refuse as before, not take the other model's samples as its own and re-record them
    under this model. (A folder of the warehouse's old place that is gone after a move still resumes.)"""
    from ingest.errors import UserError

    elsewhere = tmp_path / "elsewhere" / "models" / "lm"
    elsewhere.mkdir(parents=True)
    home = tmp_path / "wh"
    (home / "models" / "lm").mkdir(parents=True)
    lake = Lake(home)
    spec, units, _ = echo_run(lake, elsewhere)  # recorded absolute: outside the warehouse
    (row,) = lake.read("runs").to_pylist()
    assert row["model"] == str(elsewhere)
    try:
        echo_run(lake, home / "models" / "lm")
    except UserError as e:
        assert "other parameters" in str(e)
    else:
        raise AssertionError("the run of another folder was taken as this model's")
    assert lake.read("runs").to_pylist()[0]["model"] == str(elsewhere)


def test_model_key_agrees_with_the_built_macro_for_a_warehouse_reached_through_a_symlink(tmp_path: Path) -> None:
    """`build(home)` with `home` a symlink: macros/model_key.sql drops the prefix dbt is given
    ($LMAUDIT_HOME), `ingest.home.model_key` the resolved one; on old absolute rows under either spelling they
    must answer the same (Python's writers replace and pair by its answer, the marts by the macro's)."""
    from ingest.build import build
    from ingest.home import db_path, model_key

    real = tmp_path / "real" / "wh"
    (real / "models" / "lm").mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "real")
    home = link / "wh"
    lake = Lake(home)
    echo_run(lake, home / "models" / "lm")
    (row,) = lake.read("runs").to_pylist()
    recorded = [str(home / "models" / "lm"), str(real / "models" / "lm")]
    lake.write("runs", "run--r", [{**row, "model": recorded[0], "tokenizer": recorded[1]}])
    result = build(home, select=["stg_runs"], progress=False)
    assert result.success, result.failures
    with duckdb.connect(str(db_path(home)), read_only=True) as con:
        got = list(con.execute("select model, tokenizer from stg_runs").fetchone())
    assert got == [model_key(home, m) for m in recorded]


def _render_macro(home_env: str, column: str) -> str:
    """macros/model_key.sql rendered as dbt renders it with $LMAUDIT_HOME = `home_env`."""
    import jinja2

    src = (Path(__file__).resolve().parents[2] / "macros" / "model_key.sql").read_text()
    env = jinja2.Environment(extensions=["jinja2.ext.do"])
    module = env.from_string(src, globals={"env_var": lambda name: {"LMAUDIT_HOME": home_env}[name]}).module
    return str(module.model_key(column))


HOMES = ["/", "/w/here", "/w/it's here", "/w/a.b+(c)[d]$^|x", "/w/caf\u00e9 %_", "/w/here/"]
RECORDED = ["{h}/models/lm", "{h}/sandbox/tiny-seed0/model", "{h}2/models/lm", "/w/old/sandbox/tiny-seed0/model",
            "/w/old/models/lm", "EleutherAI/pythia-70m", "models/lm", "{h}", "{h}/"]


def test_the_rendered_macro_and_model_key_agree_on_odd_warehouse_paths() -> None:
    """The macro as rendered (quotes, regex metacharacters, non-ASCII, a trailing slash in $LMAUDIT_HOME, as a
    plain `dbt build` may be given it) against `ingest.home.model_key` on the same warehouse."""
    from ingest.home import model_key

    with duckdb.connect() as con:
        for h in HOMES:
            base = h.rstrip("/")
            sql = f"select {_render_macro(h, 'm')} from (select unnest(?) as m)"
            recorded = [r.format(h=base) for r in RECORDED]
            got = [r[0] for r in con.execute(sql, [recorded]).fetchall()]
            assert got == [model_key(Path(h), r) for r in recorded], h


def test_two_lake_recipes_read_as_one_model_are_not_mixed(tmp_path: Path) -> None:
    """Before b265c11, the workaround for runs that lost their documented mixture after a move was `mixture
    documented add --model <old absolute sandbox path>`: a `documented--` partition beside the sandbox's own.
    Both now read as `sandbox/tiny-seed0/model`; int_mixtures_documented promises one recipe per model."""
    from ingest.build import build
    from ingest.home import db_path

    home = tmp_path / "wh"
    lake = Lake(home)
    lake.init()
    lake.write("mixtures_documented", "sandbox--tiny-seed0", [
        {"mixture_id": f"s{d}", "model": "sandbox/tiny-seed0/model", "domain": d, "weight": w, "source": "docs"}
        for d, w in (("code", 0.8), ("web", 0.2))])
    lake.write("mixtures_documented", "documented--old", [
        {"mixture_id": f"u{d}", "model": "/old/wh/sandbox/tiny-seed0/model", "domain": d, "weight": w,
         "source": "user"} for d, w in (("code", 0.2), ("web", 0.8))])
    result = build(home, select=["stg_mixtures_documented", "int_mixtures_documented", "mixtures_documented",
                                 "int_mixture_params"], progress=False)
    assert result.success, result.failures
    with duckdb.connect(str(db_path(home)), read_only=True) as con:
        (share,) = con.execute("select share from int_mixtures_documented where model = 'sandbox/tiny-seed0/model' "
                               "and domain = 'code'").fetchone()
    assert share == pytest.approx(0.8)  # the recipe under the key as written (the sandbox's own) wins, whole


def test_a_lake_with_one_models_estimates_under_two_old_places_still_builds(tmp_path: Path) -> None:
    """Before b265c11 a moved warehouse where `mixture tokenizer` ran again in the new place held two estimates
    (the default key was the absolute folder: old place, new place); they were two models. model_key now
    reads both as `sandbox/tiny-seed0/model`, and nothing replaces the old one until the estimate is rerun."""
    from ingest.build import build

    home = tmp_path / "wh"
    lake = Lake(home)
    lake.init()

    def rows(model: str) -> list[dict]:
        return [{"estimate_id": f"{model}-{d}", "model": model, "tokenizer": f"{model}/tokenizer.json", "domain": d,
                 "estimate": 0.5, "n_reference_docs": 5, "solver_status": "optimal",
                 "params": json.dumps({"method": "paper"}), "n_boot": 0, "n_boot_failed": 0, "seed": 0,
                 "ci_level": 0.95} for d in ("code", "web")]

    lake.write("tokenizer_mixture_estimates", "tokenizer--old", rows("/old/wh/sandbox/tiny-seed0/model"))
    lake.write("tokenizer_mixture_estimates", "tokenizer--new", rows("/new/wh/sandbox/tiny-seed0/model"))
    result = build(home, select=["+fct_mixture_estimates"], progress=False)
    assert result.success, result.failures
