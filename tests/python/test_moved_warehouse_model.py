"""A moved warehouse's runs still pair with their sandbox model's documented mixture, and resume in place.

The sandbox model lives inside the warehouse (`sandbox/<size>-seed<n>/model`); its runs and its documented
mixture both name it. Before model paths were relative, both recorded the absolute folder: after `mv`, the
`lmaudit sandbox build` a user runs in the new place rewrote the documented mixture under the new absolute
path while the runs kept the old one, so `fct_mixture_evaluation` dropped them, and the same `lmaudit
generate` command refused to resume ("other parameters": the model path is in the run's fingerprint).

Oracles: the pairing and estimates the marts give before the move (the same run, the same documented
mixture, so the same rows), and the run's own rows (a resumed finished run generates nothing). A run row as
recorded before the change (the old place's absolute path) must pair as well. The old place is rebuilt
with a folder that is not a model: anything that loaded the model from there would fail.

The fast tests pin the rule itself: what is recorded (`stored_model`), how old rows are read (`model_key`,
the same in Python and in macros/model_key.sql), what is loaded (`model_location`), and the writers that
replace an entry filed under an old absolute path instead of keeping two of one model.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import duckdb
import pytest
from conftest import run_cli, seed_tiny_sandbox

from ingest.home import db_path
from ingest.lake import Lake, make_key, text_hash

SELECT = ["path:models/staging", "path:models/intermediate/mixture", "path:models/marts/mixture",
          "mixtures_documented"]
MODEL = Path("sandbox") / "tiny-seed0" / "model"
GENERATE = ("generate", "--corpus", "sandbox-tiny", "--settings", "unconditional", "--n-generations", "12",
            "--max-new-tokens", "8", "--purpose", "mixture", "--run-prefix", "tiny", "--no-estimate")


def _classifier(home: Path) -> None:
    """Hand-made posteriors over the sandbox's documented domains for every generation in the lake (and 8
    reference documents per domain), so fct_mixture_estimates has rows without training a classifier."""
    lake = Lake(home)
    domains = sorted({r["domain"] for r in lake.read("mixtures_documented").to_pylist()})
    k = len(domains)

    def probs(i: int) -> list[float]:
        return [0.7 if j == i else 0.3 / (k - 1) for j in range(k)]

    refs = [{"ref_doc_id": make_key("refs", d, j), "domain": d, "text": f"{d} {j}", "split": "train",
             "fold": j // 2, "source": "refs", "doc_id": f"{d}-{j}"} for d in domains for j in range(8)]
    lake.write("reference_docs", "refs", refs)
    cid = make_key("hand")
    lake.write("classifiers", "hand", [{"classifier_id": cid, "name": "hand", "backend": "hand", "domains": domains,
                                        "temperature": 1.0, "params": json.dumps({"calibration_fold": 0}),
                                        "fitted_on": "by hand"}])
    rows = [{"output_id": make_key(cid, r["ref_doc_id"]), "classifier_id": cid, "item_id": r["ref_doc_id"],
             "item_kind": "reference", "fold": r["fold"], "probs": probs(domains.index(r["domain"]))} for r in refs]
    gens = lake.read("generations").to_pylist()  # a run's sample g gets domain g mod k
    rows += [{"output_id": make_key(cid, g["generation_id"]), "classifier_id": cid, "item_id": g["generation_id"],
              "item_kind": "generation", "fold": None, "probs": probs(g["sample_idx"] % k),
              "text_hash": text_hash(g["text"])}
             for g in gens]
    lake.write("classifier_outputs", "hand", rows)


def _legacy_run(home: Path, recorded_model: str) -> None:
    """A copy of run tiny-unconditional as lmaudit recorded it before model paths were relative: the model
    folder's absolute path (`recorded_model`), under run id legacy-unconditional."""
    lake = Lake(home)
    (run,) = [r for r in lake.read("runs").to_pylist() if r["run_id"] == "tiny-unconditional"]
    gens = [{**g, "run_id": "legacy-unconditional", "generation_id": make_key("legacy", g["generation_id"])}
            for g in lake.read("generations").to_pylist() if g["run_id"] == "tiny-unconditional"]
    lake.write("generations", "legacy", gens)
    lake.write("runs", "run--legacy-unconditional",
               [{**run, "run_id": "legacy-unconditional", "model": recorded_model, "tokenizer": recorded_model}])


def _build(home: Path) -> dict[str, list[tuple]]:
    from ingest.build import build

    os.environ["DBT_INDIRECT_SELECTION"] = "cautious"  # only the mixture models and staging
    try:
        result = build(home, select=SELECT, progress=False, vars_=json.dumps({"mixture_bootstrap_resamples": 5}))
    finally:
        os.environ.pop("DBT_INDIRECT_SELECTION", None)
    assert result.success, result.failures
    with duckdb.connect(str(db_path(home)), read_only=True) as con:
        return {run: con.execute(
            "select documented_model, estimator, round(overlap_accuracy, 9) from fct_mixture_evaluation "
            "where run_id = ? order by estimator", [run]).fetchall()
            for run in ("tiny-unconditional", "legacy-unconditional")}


def _runs(home: Path) -> list[dict]:
    """The runs rows but the time a (resumed) run last finished."""
    return sorted(({k: v for k, v in r.items() if k != "finished_at"} for r in Lake(home).read("runs").to_pylist()),
                  key=lambda r: r["run_id"])


@pytest.mark.slow
def test_runs_pair_with_their_documented_mixture_after_the_warehouse_moves(tiny_sandbox, tmp_path: Path) -> None:
    old = tmp_path / "a" / "warehouse"
    Lake(old).init()
    seed_tiny_sandbox(tiny_sandbox, old)
    for args in (("sandbox", "build", "--size", "tiny"),
                 ("prompts", "build", "--corpus", "sandbox-tiny", "--setting", "unconditional", "--n", "1"),
                 (*GENERATE, "--model", str(old / MODEL))):
        p = run_cli(*args, home=old)
        assert p.returncode == 0, p.stderr
    _legacy_run(old, str(old / MODEL))
    _classifier(old)
    before = _build(old)
    assert before["tiny-unconditional"] and before["tiny-unconditional"] == before["legacy-unconditional"]
    documented = before["tiny-unconditional"][0][0]
    runs_before = _runs(old)

    new = tmp_path / "b" / "moved"
    new.parent.mkdir()
    shutil.move(str(old), str(new))
    # the old place now holds something else: a folder at the model's path that no model loader accepts
    (old / MODEL).mkdir(parents=True)
    (old / MODEL / "config.json").write_text("not a model")
    p = run_cli("sandbox", "build", "--size", "tiny", home=new)  # what a user runs after the move
    assert p.returncode == 0, p.stderr
    # the same generate command, with the model where it is now, finds the run finished
    p = run_cli(*GENERATE, "--model", str(new / MODEL), home=new)
    assert p.returncode == 0, p.stderr
    assert "tiny-unconditional: 12 generations (1/1 chunks already done)" in p.stdout
    assert _runs(new) == runs_before
    after = _build(new)
    assert after == before, "the runs must pair with the sandbox's documented mixture as before the move"
    assert documented == MODEL.as_posix()  # a key that does not name the warehouse's place
    from ingest.home import model_location

    # a model recorded with the old place's absolute path is loaded from the moved warehouse, never from there
    legacy = [r for r in _runs(new) if r["run_id"] == "legacy-unconditional"][0]["model"]
    assert model_location(new, legacy) == str(new / MODEL)
    assert model_location(new, MODEL.as_posix()) == str(new / MODEL)
    assert model_location(new, "EleutherAI/pythia-70m") == "EleutherAI/pythia-70m"  # a hub name stays one


class _Echo:
    """A backend that returns each prompt as its sample: generation without a model."""

    name = "echo"

    def generate(self, requests, sampling):
        from ingest.generate.backends import GenOutput

        return [GenOutput(r.key, tuple(r.prompt_ids), f"sample {r.seed}", "length") for r in requests]


def echo_run(lake: Lake, model: Path):
    from ingest.generate.backends import SamplingConfig
    from ingest.generate.runner import PromptUnit, RunSpec, run_generation

    spec = RunSpec("r", str(model), "unconditional", "echo", None, SamplingConfig(max_new_tokens=4), chunk_size=2)
    units = [PromptUnit("p", (1, 2), 3)]
    return spec, units, run_generation(lake, _Echo(), spec, units, progress=False)


def test_a_run_records_a_model_inside_the_warehouse_relative_and_resumes_an_absolute_one(tmp_path: Path) -> None:
    """The runs row names a model folder inside the warehouse relative to it; a run recorded the old way (the
    absolute folder in its fingerprint) resumes in place and after a move instead of 'other parameters'."""
    old = tmp_path / "a" / "wh"
    (old / "models" / "lm").mkdir(parents=True)
    spec, units, first = echo_run(Lake(old), old / "models" / "lm")
    (row,) = Lake(old).read("runs").to_pylist()
    assert row["model"] == row["tokenizer"] == "models/lm" and first.n_chunks == 2
    # the row as lmaudit wrote it before: the absolute folder, and the fingerprint made with it
    legacy_fp = spec.fingerprint(units)
    Lake(old).write("runs", "run--r", [{**row, "model": str(old / "models" / "lm"), "sampling_params": json.dumps(
        {**json.loads(row["sampling_params"]), "fingerprint": legacy_fp})}])
    _, _, again = echo_run(Lake(old), old / "models" / "lm")
    assert again.n_chunks_skipped == 2
    (row,) = Lake(old).read("runs").to_pylist()
    assert row["model"] == "models/lm" and json.loads(row["sampling_params"])["fingerprint"] == \
        spec.fingerprint(units, "models/lm")  # re-recorded with the key it records (review: a third run resumes)
    Lake(old).write("runs", "run--r", [{**row, "model": str(old / "models" / "lm")}])
    new = tmp_path / "b" / "wh"
    new.parent.mkdir()
    shutil.move(str(old), str(new))
    _, _, moved = echo_run(Lake(new), new / "models" / "lm")
    assert moved.n_chunks_skipped == 2 and Lake(new).read("runs").to_pylist()[0]["model"] == "models/lm"
    # an imported run records its model the same way
    from ingest.importers.generations import import_generations

    gens = tmp_path / "g.jsonl"
    gens.write_text(json.dumps({"prompt_id": "p", "prompt": "Hi", "text": "there"}) + "\n")
    import_generations(Lake(new), gens, run_id="imp", model=str(new / "models" / "lm"), setting="generic")
    assert {r["run_id"]: r["model"] for r in Lake(new).read("runs").to_pylist()}["imp"] == "models/lm"
    # a hub name, and a folder outside the warehouse, are recorded as given
    from ingest.home import stored_model

    assert stored_model(new, "EleutherAI/pythia-70m") == "EleutherAI/pythia-70m"
    assert stored_model(new, str(tmp_path)) == str(tmp_path)


KEYS = {  # recorded -> as the marts read it, in a warehouse at /w/here
    "/w/here/models/lm": "models/lm",
    "/w/here/sandbox/tiny-seed0/model": "sandbox/tiny-seed0/model",
    "/w/old/sandbox/tiny-seed0/model": "sandbox/tiny-seed0/model",
    "/w/old/sandbox/tiny-seed0/model/checkpoints/step-000200/": "sandbox/tiny-seed0/model/checkpoints/step-000200",
    "/w/old/sandbox/tiny-seed0/model/extra": "/w/old/sandbox/tiny-seed0/model/extra",
    "/w/old/models/lm": "/w/old/models/lm",
    "/w/here2/models/lm": "/w/here2/models/lm",
    "sandbox/tiny-seed0/model": "sandbox/tiny-seed0/model",
    "EleutherAI/pythia-70m": "EleutherAI/pythia-70m",
    "gpt2": "gpt2",
}


def test_model_key_in_python_and_in_the_sql_macro_agree() -> None:
    """macros/model_key.sql is `ingest.home.model_key` in SQL: the same pattern, the same answers."""
    import re

    from ingest.home import SANDBOX_MODEL, model_key

    macro = (Path(__file__).resolve().parents[2] / "macros" / "model_key.sql").read_text()
    (pattern,) = re.findall(r"'(\^/[^']*)'", macro)
    assert pattern == SANDBOX_MODEL.pattern
    for recorded, want in KEYS.items():
        assert model_key(Path("/w/here"), recorded) == want, recorded
    home = "/w/here/"
    sql = (f"select case when starts_with(m, '{home}') then substr(m, {len(home) + 1}) else "
           f"coalesce(nullif(regexp_extract(m, '{pattern}', 1), ''), m) end from (select unnest(?) as m)")
    with duckdb.connect() as con:
        got = [r[0] for r in con.execute(sql, [list(KEYS)]).fetchall()]
    assert got == list(KEYS.values())


def test_documenting_a_model_folder_files_it_relative_and_replaces_its_absolute_entry(tmp_path: Path) -> None:
    from ingest.documented_mixtures import DocumentedMixture, register

    home = tmp_path / "wh"
    (home / "models" / "lm").mkdir(parents=True)
    lake = Lake(home)
    lake.write("mixtures_documented", "documented--old", [  # `mixture documented add` before paths were relative
        {"mixture_id": "x", "model": str(home / "models" / "lm"), "domain": "code", "weight": 1.0, "source": "old"}])
    lake.write("runs", "r", [{"run_id": "r", "model": "models/lm", "setting": "unconditional"}])
    r = register(lake, DocumentedMixture(str(home / "models" / "lm"), (("code", 0.5), ("web", 0.5)), "new", 1.0))
    assert r.replaced_source == "old" and r.n_matching_runs == 1
    assert {(x["model"], x["source"]) for x in lake.read("mixtures_documented").to_pylist()} == {("models/lm", "new")}


def test_a_tokenizer_estimate_replaces_the_one_filed_under_the_absolute_folder(tmp_path: Path) -> None:
    from ingest.mixture.tokenizer.store import TABLE, model_key, write_estimate

    home = tmp_path / "wh"
    folder = home / "sandbox" / "tiny-seed0" / "model"
    folder.mkdir(parents=True)
    (folder / "tokenizer.json").write_text("{}")
    lake = Lake(home)
    lake.write(TABLE, "tokenizer--old", [{"estimate_id": "a", "model": str(folder), "domain": "code"}])
    key = model_key(folder / "tokenizer.json", None, home)
    assert key == "sandbox/tiny-seed0/model"
    write_estimate(lake, [{"estimate_id": "b", "model": key, "domain": "code"}])
    assert [(x["estimate_id"], x["model"]) for x in lake.read(TABLE).to_pylist()] == [("b", key)]
