"""Findings the review of the relative model keys left open (test_model_key_review.py has the others).

1. `lmaudit score` recorded a model folder inside the warehouse by its absolute path in `text_scores` and
   `text_method_scores`: it records it as runs do (`stored_model`), and rows written the old way (absolute)
   are taken over as done, not scored again nor kept beside the new ones.
2. `mixture sweep --model <folder inside the warehouse>` keyed its points by the absolute folder: after a move
   the same sweep recomputed every point and its rows named the old place.
3. `stored_model` kept a relative path to a folder outside the warehouse as given, so `--model models/lm` run
   from another working directory shared the key of the warehouse's own `models/lm`, another model.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Callable

import pytest

from ingest.lake import Lake, make_key
from tests.python.test_moved_warehouse_model import echo_run

# ------------------------------------------------------------------------------------------------ 1. scores

ITEMS = [(f"d{i}", "reference", "word " * (i + 2)) for i in range(5)]  # 3 chunks of 2


class _Scorer:
    """HFScorer without a model: every word a token of log-probability -1; counts the texts it scores."""

    scored: list[int] = []

    def __init__(self, model: str, **kw) -> None:
        self.limit, self.device = 512, "cpu"

    def encode(self, text: str) -> tuple[list[int], bool]:
        return [0] + [1] * len(text.split()), False

    def score_ids(self, seqs):
        from ingest.score.logprobs import TokenScores

        _Scorer.scored.append(len(seqs))
        return [TokenScores([-1.0] * (len(s) - 1), [-1.0] * (len(s) - 1), [1.0] * (len(s) - 1), False) for s in seqs]

    def score(self, texts):
        return self.score_ids([self.encode(t)[0] for t in texts])


def _score(home: Path):
    """`lmaudit score --model <home>/models/lm --reference --methods jointlogit --chunk-size 2`, in process."""
    from ingest.score.method_run import method_job, score_methods
    from ingest.score.run import ScoreJob, score_items

    lake, model = Lake(home), str(home / "models" / "lm")
    s = score_items(lake, ScoreJob(model), ITEMS, "reference", chunk_size=2, progress=False)
    m = score_methods(lake, method_job(lake, model, ("jointlogit",)), ITEMS, "reference", chunk_size=2)
    return s, m


def _rows(home: Path) -> dict[str, list[tuple]]:
    lake = Lake(home)
    return {"text_scores": sorted((r["score_id"], r["model"]) for r in lake.read("text_scores").to_pylist()),
            "text_method_scores": sorted((r["method_score_id"], r["model"])
                                         for r in lake.read("text_method_scores").to_pylist())}


def _as_written_before(home: Path, folder: str) -> None:
    """Every score partition as lmaudit wrote it before: the model as given (`folder`, absolute) in the rows,
    their ids and the partitions' names."""
    lake = Lake(home)
    for part in lake.partitions("text_scores"):
        _, _, source, tail = part.split("--")
        rows = [{**r, "model": folder, "score_id": make_key(folder, r["item_kind"], r["item_id"], r["text_hash"],
                                                            "authors")}
                for r in lake.read("text_scores", part).to_pylist()]
        lake.write("text_scores", f"score--{make_key(folder, None, 'authors')[:12]}--{source}--{tail}", rows,
                   meta={"source": "reference"})
        lake.delete("text_scores", part)
    for part in lake.partitions("text_method_scores"):
        _, _, source, tail = part.split("--")
        rows = [{**r, "model": folder, "method_score_id": make_key(folder, r["item_kind"], r["item_id"],
                                                                   r["text_hash"], r["method"], "authors")}
                for r in lake.read("text_method_scores", part).to_pylist()]
        lake.write("text_method_scores", f"mscore--{make_key(folder, 'jointlogit', 'authors')[:12]}--{source}--{tail}",
                   rows, meta={"source": "reference", "method": "jointlogit"})
        lake.delete("text_method_scores", part)


def test_scores_record_a_model_inside_the_warehouse_relative_and_take_over_rows_written_absolute(
        tmp_path: Path, monkeypatch) -> None:
    import ingest.score.logprobs as logprobs

    monkeypatch.setattr(logprobs, "HFScorer", _Scorer)
    old = tmp_path / "a" / "wh"
    (old / "models" / "lm").mkdir(parents=True)
    Lake(old).init()
    _score(old)
    first = _rows(old)
    assert {m for rows in first.values() for _, m in rows} == {"models/lm"}
    assert len(first["text_scores"]) == len(first["text_method_scores"]) == 5
    # the lake as an earlier lmaudit left it: the folder's absolute path; scoring again takes those rows over
    _as_written_before(old, str(old / "models" / "lm"))
    _Scorer.scored.clear()
    s, m = _score(old)
    assert (s.n_skipped, s.n_chunks, m.n_skipped, m.n_partitions) == (3, 3, 3, 3) and not _Scorer.scored
    assert _rows(old) == first  # re-recorded as scored now: relative, the same ids, nothing twice
    new = tmp_path / "b" / "wh"
    new.parent.mkdir()
    shutil.move(str(old), str(new))
    s, m = _score(new)
    assert (s.n_skipped, m.n_skipped) == (3, 3) and not _Scorer.scored and _rows(new) == first


# ------------------------------------------------------------------------------------------------ 2. sweep --model

def stand_in_sampling(monkeypatch, gen: Path) -> list[str]:
    """Sampling as a stand-in for `run_generation`: a run not in the lake yet gets the samples of the JSONL file
    `gen` as its generations; returns the models it was asked to load (appended to as it is called)."""
    import ingest.generate.backends as backends
    import ingest.generate.runner as runner
    from ingest.importers.generations import import_generations

    loaded: list[str] = []

    def sample(lake, backend, spec, units, progress=True):
        loaded.append(spec.model)
        if not any(r["run_id"] == spec.run_id for r in lake.read("runs").to_pylist()):
            import_generations(lake, gen, run_id=spec.run_id, model=spec.model, setting="unconditional",
                               purpose="mixture")

    monkeypatch.setattr(backends, "get_backend", lambda name, model, **kw: None)
    monkeypatch.setattr(runner, "run_generation", sample)
    monkeypatch.setattr("ingest.generate.plan.prompt_units", lambda *a, **k: [])
    return loaded


def _sweep_warehouse(home: Path, monkeypatch) -> tuple[Callable[[Path], str], list[str]]:
    """A warehouse with reference documents, a prompt set of corpus `c` and an empty model folder
    `sandbox/toy-seed0/model`; sampling is a stand-in for `run_generation` that writes 12 samples. Returns the
    command `mixture sweep --model <home>/sandbox/toy-seed0/model --corpus c ...` (run in process: its output)
    and the models the stand-in was asked to load."""
    from typer.testing import CliRunner

    from ingest.cli.main import app
    from ingest.corpora import corpus_id_for
    from ingest.references import import_references

    vocab = {d: [f"{d[:2]}{i}x" for i in range(40)] for d in ("alpha", "beta", "gamma")}
    rng = random.Random(0)

    def text(d: str) -> str:
        return " ".join(rng.choice(vocab[d]) for _ in range(30))

    gen = home.parent / "gen.jsonl"
    home.mkdir(parents=True)
    gen.write_text("".join(json.dumps({"prompt": "", "sample_idx": k, "text": text(d)}) + "\n"
                           for k, d in enumerate(["alpha", "beta", "gamma"] * 4)))
    loaded = stand_in_sampling(monkeypatch, gen)
    (home / "sandbox" / "toy-seed0" / "model").mkdir(parents=True)
    lake = Lake(home)
    lake.init()
    ref = home.parent / "ref.jsonl"
    ref.write_text("".join(json.dumps({"id": f"{d}-{i}", "domain": d, "text": text(d)}) + "\n"
                           for d in vocab for i in range(10)))
    import_references(lake, ref, folds=5, source="toy")
    lake.write("prompts", "p", [{"prompt_id": "x", "corpus_id": corpus_id_for("c"), "setting": "unconditional"}])

    def sweep(at: Path) -> str:
        res = CliRunner().invoke(app, ["--warehouse", str(at), "mixture", "sweep", "--model",
                                       str(at / "sandbox" / "toy-seed0" / "model"), "--corpus", "c", "--n", "12",
                                       "--axis", "reference=5", "--estimators", "cc"])
        assert res.exit_code == 0, res.output
        return res.output

    return sweep, loaded


def test_a_sweep_of_a_model_folder_inside_the_warehouse_resumes_after_a_move(tmp_path: Path, monkeypatch) -> None:
    """`mixture sweep --model <warehouse>/sandbox/toy-seed0/model` samples the model, classifies the samples
    and writes its point; after `mv` the same command with the folder where it is now finds the point done,
    and no row names either place."""
    from ingest.mixture.sweep import TABLE

    old = tmp_path / "a" / "wh"
    sweep, loaded = _sweep_warehouse(old, monkeypatch)
    assert "1 computed" in sweep(old)
    assert loaded == [str(old / "sandbox" / "toy-seed0" / "model")]  # the folder in this warehouse
    new = tmp_path / "b" / "wh"
    new.parent.mkdir()
    shutil.move(str(old), str(new))
    assert "0 computed, 1 done before" in sweep(new)
    rows = Lake(new).read(TABLE).to_pylist()
    assert rows and {r["model"] for r in rows} == {"sandbox/toy-seed0/model"}
    assert str(tmp_path) not in json.dumps([r["params"] for r in rows])
    assert {r["model"] for r in Lake(new).read("runs").to_pylist()} == {"sandbox/toy-seed0/model"}


def test_a_sweep_of_a_model_folder_takes_over_the_points_it_keyed_by_the_absolute_folder(
        tmp_path: Path, monkeypatch) -> None:
    """Points an earlier `mixture sweep --model` wrote keyed by the folder's absolute path (its Sampler's
    model) are found done by the same command and re-recorded relative: not computed again, not kept twice."""
    from ingest.mixture.sweep import NEUTRAL, TABLE, PointConfig, Sampler, SweepSpec, parse_grid, run_sweep

    home = tmp_path / "wh"
    sweep, _ = _sweep_warehouse(home, monkeypatch)
    folder = str(home / "sandbox" / "toy-seed0" / "model")
    spec = SweepSpec("toy-seed0", parse_grid(["reference=5"]), base=PointConfig(temperature=NEUTRAL.temperature),
                     estimators=("cc",))
    run_sweep(Lake(home), spec, Sampler(model=folder, corpus="c", n_generations=12), progress=False)
    before = Lake(home).read(TABLE).to_pylist()
    assert {r["model"] for r in before} == {folder}  # as the command wrote it then
    assert "0 computed, 1 done before" in sweep(home)
    after = Lake(home).read(TABLE).to_pylist()
    assert len(Lake(home).partitions(TABLE)) == 1 and {r["model"] for r in after} == {"sandbox/toy-seed0/model"}
    assert [(r["domain"], r["estimate"]) for r in after] == [(r["domain"], r["estimate"]) for r in before]
    assert folder not in json.dumps([r["params"] for r in after])


# ------------------------------------------------------------------------------------------------ 3. outside, relative

def test_a_relative_folder_outside_the_warehouse_is_recorded_by_its_absolute_path(tmp_path: Path,
                                                                                  monkeypatch) -> None:
    """`--model models/lm` given in /work (outside the warehouse, which has a `models/lm` of its own): two
    folders, two keys. Hub names and keys already relative that are no folder from here stay as given."""
    from ingest.home import model_key, model_location, stored_model

    home = tmp_path / "wh"
    (home / "models" / "lm").mkdir(parents=True)
    work = tmp_path / "work"
    (work / "models" / "lm").mkdir(parents=True)
    monkeypatch.chdir(work)
    recorded = stored_model(home, "models/lm")
    assert recorded == str(work / "models" / "lm")
    assert model_key(home, recorded) != model_key(home, stored_model(home, str(home / "models" / "lm")))
    assert model_location(home, recorded) == str(work / "models" / "lm")  # never the warehouse's namesake
    assert stored_model(home, "EleutherAI/pythia-70m") == "EleutherAI/pythia-70m"
    assert stored_model(home, "sandbox/tiny-seed0/model") == "sandbox/tiny-seed0/model"
    monkeypatch.chdir(home)  # a folder inside, given relative from the warehouse: its key relative to it
    assert stored_model(home, "models/lm") == "models/lm"


def test_runs_of_an_outside_folder_and_the_warehouses_namesake_are_two_models(tmp_path: Path, monkeypatch) -> None:
    home = tmp_path / "wh"
    (home / "models" / "lm").mkdir(parents=True)
    work = tmp_path / "work"
    (work / "models" / "lm").mkdir(parents=True)
    monkeypatch.chdir(work)
    lake = Lake(home)
    echo_run(lake, Path("models/lm"))
    (row,) = lake.read("runs").to_pylist()
    assert row["model"] == row["tokenizer"] == str(work / "models" / "lm")
    from ingest.errors import UserError

    with pytest.raises(UserError, match="other parameters"):  # run r is the outside folder's, not this one's
        echo_run(lake, home / "models" / "lm")


def legacy_relative_run(lake: Lake, model: str) -> None:
    """A run of `model` (a folder relative to the working directory) recorded as an earlier lmaudit did: the
    relative path as given, in the row and in its fingerprint."""
    spec, units, _ = echo_run(lake, Path(model))
    (row,) = lake.read("runs").to_pylist()
    lake.write("runs", "run--r", [{**row, "model": model, "tokenizer": model, "sampling_params": json.dumps(
        {**json.loads(row["sampling_params"]), "fingerprint": spec.fingerprint(units, model)})}])


def test_a_run_recorded_with_a_relative_outside_folder_resumes_and_is_re_recorded_absolute(
        tmp_path: Path, monkeypatch) -> None:
    """A run an earlier lmaudit recorded with `--model models/lm` as given (relative, outside the warehouse)
    resumes from the same working directory (the same fingerprint), re-recorded by the folder's absolute
    path, and resumes again."""
    home = tmp_path / "wh"
    work = tmp_path / "work"
    (work / "models" / "lm").mkdir(parents=True)
    monkeypatch.chdir(work)
    lake = Lake(home)
    legacy_relative_run(lake, "models/lm")
    for _ in range(2):
        _, _, again = echo_run(lake, Path("models/lm"))
        assert again.n_chunks_skipped == 2
        (row,) = lake.read("runs").to_pylist()
        assert row["model"] == row["tokenizer"] == str(work / "models" / "lm")


def test_a_sweep_samples_a_temperature_once_for_all_its_points(tmp_path: Path, monkeypatch) -> None:
    """Every point at one temperature classifies the same run: asked for once per sweep, so the model is loaded
    once (the real runner loads it even for a finished run, to check its fingerprint), not once per point."""
    from ingest.mixture.sweep import NEUTRAL, TABLE, PointConfig, Sampler, SweepSpec, parse_grid, run_sweep

    home = tmp_path / "wh"
    _, loaded = _sweep_warehouse(home, monkeypatch)
    spec = SweepSpec("toy", parse_grid(["reference=5,6,7"]), base=PointConfig(temperature=NEUTRAL.temperature),
                     estimators=("cc",))
    res = run_sweep(Lake(home), spec, Sampler(model="sandbox/toy-seed0/model", corpus="c", n_generations=12),
                    progress=False)
    assert len(res.computed) == 3 and len(Lake(home).partitions(TABLE)) == 3
    assert len(loaded) == 1
