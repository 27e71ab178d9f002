"""`mixture inject` keys its points by the sandbox model as runs record it (relative to the warehouse).

Before 2026-12-07 it keyed them by the model folder's absolute path: a moved or copied warehouse computed every
point again (sampling included) and kept both copies, and its rows named the old place. Points written that
way are taken over when they were computed with the same settings, and replaced otherwise; a replaced point
reuses the samples the old spelling drew. Training, the held-out documents and sampling are stand-ins here
(the real ones take minutes per share); the keys, the lake and the classifier are real.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from types import SimpleNamespace

from ingest.lake import Lake
from ingest.mixture.inject import make_plan, run_inject
from ingest.mixture.sweep import TABLE
from ingest.sandbox.corpus import Document
from tests.python.test_model_key_leftovers import stand_in_sampling

DOMAINS = ("code", "boilerplate", "documentation", "headers")  # the tiny sandbox's
STUDY = "inject-headers-1200steps"


def _stand_ins(home: Path, monkeypatch) -> list[str]:
    """Stand-ins for training (an empty model folder per mixture), held-out documents (30 words of a domain's
    own vocabulary each) and sampling (12 samples imported as the run); returns the models sampling loaded."""
    from ingest.corpora import corpus_id_for

    vocab = {d: [f"{d[:3]}{i}x" for i in range(40)] for d in DOMAINS}
    rng = random.Random(0)

    def text(d: str) -> str:
        return " ".join(rng.choice(vocab[d]) for _ in range(30))

    docs = [Document(f"{d}-{i}", d, "held-out", text(d)) for d in DOMAINS for i in range(10)]
    gen = home.parent / "gen.jsonl"
    gen.write_text("".join(json.dumps({"prompt": "", "sample_idx": k, "text": text(d)}) + "\n"
                           for k, d in enumerate(list(DOMAINS) * 3)))

    def build(lake, home_, size, seed=0, progress=True):
        root = Path(home_) / "sandbox" / f"{size.name}-seed{seed}"
        (root / "model").mkdir(parents=True, exist_ok=True)
        return SimpleNamespace(model_dir=root / "model", size=size, corpus_jsonl=root / "corpus.jsonl"), "c"

    loaded = stand_in_sampling(monkeypatch, gen)
    monkeypatch.setattr("ingest.sandbox.register.build_and_register", build)
    monkeypatch.setattr("ingest.sandbox.reference.held_out_documents", lambda *a, **k: docs)
    lake = Lake(home)
    lake.init()
    lake.write("prompts", "p", [{"prompt_id": "x", "corpus_id": corpus_id_for("c"), "setting": "unconditional"}])
    return loaded


PLAN = make_plan("headers", (0.0, 0.1), None, "tiny", 1200, 0)


def _inject(home: Path, estimators=("cc",)):
    return run_inject(Lake(home), home, PLAN, n_generations=12, per_domain=10, estimators=estimators,
                      progress=False)


def _rows(home: Path) -> list[dict]:
    return sorted(Lake(home).read(TABLE).to_pylist(), key=lambda r: (r["value"], r["estimator"], r["domain"]))


def _as_written_before(monkeypatch) -> None:
    """inject as it ran before 2026-12-07: the model keyed by its folder's absolute path."""
    monkeypatch.setattr("ingest.home.stored_model", lambda home, model: str(Path(model).resolve()))


def injected_as_before(home: Path, monkeypatch) -> list[str]:
    """A warehouse `home` with the stand-ins, injected once as lmaudit did before 2026-12-07 (points keyed by
    the absolute folder); returns the models sampling loaded."""
    home.mkdir(parents=True)
    loaded = _stand_ins(home, monkeypatch)
    with monkeypatch.context() as m:
        _as_written_before(m)
        _inject(home)
    return loaded


def test_inject_keys_points_by_the_model_as_runs_record_it_and_resumes_after_a_move(
        tmp_path: Path, monkeypatch) -> None:
    old = tmp_path / "a" / "wh"
    old.mkdir(parents=True)
    loaded = _stand_ins(old, monkeypatch)
    res = _inject(old)
    assert res.computed == [0.0, 0.1]
    rows = _rows(old)
    models = {r["model"] for r in rows}
    assert models == {f"sandbox/{n}/model" for n in
                      (p.parent.name for p in (old / "sandbox").glob("*/model"))} and len(models) == 2
    assert str(tmp_path) not in json.dumps(rows, default=str)
    n_loads = len(loaded)
    new = tmp_path / "b" / "wh"
    new.parent.mkdir()
    shutil.move(str(old), str(new))
    res = _inject(new)
    assert res.computed == [] and res.skipped == [0.0, 0.1]
    assert len(loaded) == n_loads  # nothing sampled again
    assert [(r["model"], r["value"], r["estimate"]) for r in _rows(new)] == \
        [(r["model"], r["value"], r["estimate"]) for r in rows]


def test_points_keyed_by_the_absolute_folder_are_taken_over_not_redone(tmp_path: Path, monkeypatch) -> None:
    home = tmp_path / "wh"
    loaded = injected_as_before(home, monkeypatch)
    before = _rows(home)
    assert all(Path(r["model"]).is_absolute() for r in before)  # as the command wrote them then
    n_loads = len(loaded)
    res = _inject(home)
    assert res.computed == [] and res.skipped == [0.0, 0.1] and len(loaded) == n_loads
    after = _rows(home)
    assert len(Lake(home).partitions(TABLE)) == 2
    assert all(r["model"].startswith("sandbox/") for r in after)
    assert [(r["value"], r["estimator"], r["domain"], r["estimate"]) for r in after] == \
        [(r["value"], r["estimator"], r["domain"], r["estimate"]) for r in before]
    assert str(home) not in json.dumps(after, default=str)


def test_an_old_point_of_other_settings_is_replaced_once_and_its_samples_reused(tmp_path: Path,
                                                                                 monkeypatch) -> None:
    home = tmp_path / "wh"
    injected_as_before(home, monkeypatch)
    runs = {r["run_id"] for r in Lake(home).read("runs").to_pylist()}
    res = _inject(home, estimators=("cc", "acc"))  # other settings: the points are computed again
    assert res.computed == [0.0, 0.1]
    # from the samples drawn before: the same runs, no new one
    assert {r["run_id"] for r in Lake(home).read("runs").to_pylist()} == runs
    assert {r["run_id"] for r in _rows(home)} == runs
    after = _rows(home)
    assert len(Lake(home).partitions(TABLE)) == 2  # one copy per share, not the old beside the new
    assert {r["estimator"] for r in after} == {"cc", "acc"}
    assert all(r["model"].startswith("sandbox/") for r in after)


def test_the_sampled_model_is_loaded_from_this_warehouse(tmp_path: Path, monkeypatch) -> None:
    """The relative key is loaded as this warehouse's folder (Sampler: model_location), never a folder
    relative to the working directory."""
    home = tmp_path / "wh"
    home.mkdir()
    loaded = _stand_ins(home, monkeypatch)
    _inject(home)
    assert loaded and all(Path(m).is_absolute() and Path(m).is_dir() and str(home) in m for m in loaded)
