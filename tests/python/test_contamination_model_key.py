"""`lmaudit contamination --model` records the model as runs record it (`stored_model`: a folder inside the
warehouse relative to it) in `contamination_attacks.model`, `attack_id` and the attack partition's name.

Before 2026-12-07 it recorded `--model` as given: `--model models/lm` from two working directories, or a
sandbox model before and after the warehouse moved, made two models in fct_contamination_benchmarks, and rows
named the old place. Attack partitions written that way (a spelling `ingest.home.model_key` reads as this
model) are taken over on a rerun: an attack made on the same texts with the same token budget and prompt
length is re-recorded under the key (model and attack_id change), not made again, once one re-made attack
shows the model still writes what it wrote; the old partition goes, so there is exactly one copy.

The index, the tracing and the lake are real (the mini stack); the generation backend is a stand-in that
counts what it is asked to generate (the real one loads a model).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest

from ingest.generate.backends import GenOutput
from ingest.lake import Lake, make_key

TABLE = "contamination_attacks"
ITEMS = [{"id": "echo", "input": "The cat sat on the", "answer": "mat."},
         {"id": "fresh", "input": "Quillon zebras negotiate turquoise ladders", "answer": "Nine lanterns."},
         {"id": "other", "input": "The harbourmaster counts", "answer": "every obsidian pebble twice."},
         {"id": "more", "input": "Seventeen violins hum", "answer": "beneath marmalade clouds."}]


class _Backend:
    """Greedy stand-in: reproduces the answers it knows, writes `other` for the rest; one token per byte."""

    bos_id = 0

    def __init__(self, knows=("echo",), other: str = "something else"):
        self.answers = {i["id"]: i["answer"] for i in ITEMS if i["id"] in knows}
        self.other, self.asked = other, []

    def encode(self, text: str) -> list[int]:
        return list(text.encode())

    def generate(self, requests, sampling):
        self.asked += [r.key for r in requests]
        return [GenOutput(r.key, tuple(range(sampling.max_new_tokens)), self.answers.get(r.key, self.other), "length")
                for r in requests]


def _bench(where: Path, items=ITEMS) -> Path:
    bench = where / "mybench.jsonl"
    bench.write_text("".join(json.dumps(i) + "\n" for i in items))
    return bench


def _attack(home: Path, model: str | Path, stack, backend=None, items=ITEMS):
    from ingest.contamination.run import run_contamination

    return run_contamination(Lake(home), _bench(home.parent, items), (str(stack["index"]),),
                             backend=backend or _Backend(), model=str(model), progress=False)


def _rows(home: Path) -> list[dict]:
    return sorted(Lake(home).read(TABLE).to_pylist(), key=lambda r: r["item_id"])


def _as_written_before(monkeypatch) -> None:
    """contamination as it ran before 2026-12-07: a model folder recorded by its absolute path."""
    monkeypatch.setattr("ingest.home.stored_model", lambda home, model: str(Path(model).resolve())
                        if Path(model).is_dir() else model)


def _moved(old: Path, tmp_path: Path) -> Path:
    """`mv` of the warehouse `old` to tmp_path/b/wh: its new place."""
    new = tmp_path / "b" / "wh"
    new.parent.mkdir()
    shutil.move(str(old), str(new))
    return new


def _home(root: Path) -> Path:
    root.mkdir(parents=True)
    Lake(root).init()
    (root / "sandbox" / "toy-seed0" / "model").mkdir(parents=True)
    (root / "models" / "lm").mkdir(parents=True)
    return root


def test_a_model_folder_inside_the_warehouse_is_recorded_relative(mini_stack, tmp_path: Path,
                                                                  monkeypatch) -> None:
    home = _home(tmp_path / "wh")
    s = _attack(home, home / "models" / "lm", mini_stack)
    assert (s.n_attacked, s.n_reproduced) == (4, 1)
    rows = _rows(home)
    assert {r["model"] for r in rows} == {"models/lm"}
    assert [r["attack_id"] for r in rows] == [make_key("mybench", r["item_id"], "models/lm") for r in rows]
    assert str(tmp_path) not in json.dumps(rows, default=str) + " ".join(Lake(home).partitions(TABLE))
    # `--model models/lm` from the warehouse is the same model; from another folder it is that folder's own
    monkeypatch.chdir(home)
    _attack(home, "models/lm", mini_stack)
    assert {r["model"] for r in _rows(home)} == {"models/lm"} and len(Lake(home).partitions(TABLE)) == 1
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "models" / "lm").mkdir(parents=True)
    monkeypatch.chdir(elsewhere)
    _attack(home, "models/lm", mini_stack)
    assert {r["model"] for r in _rows(home)} == {"models/lm", str(elsewhere / "models" / "lm")}


def test_after_a_move_the_same_command_keeps_one_copy_under_the_same_key(mini_stack, tmp_path: Path) -> None:
    old = _home(tmp_path / "a" / "wh")
    _attack(old, old / "sandbox" / "toy-seed0" / "model", mini_stack)
    before = _rows(old)
    new = _moved(old, tmp_path)
    _attack(new, new / "sandbox" / "toy-seed0" / "model", mini_stack)
    after = _rows(new)
    assert len(Lake(new).partitions(TABLE)) == 1 and len(after) == len(ITEMS)
    assert {r["model"] for r in after} == {"sandbox/toy-seed0/model"}
    assert [(r["attack_id"], r["continuation"]) for r in after] == [(r["attack_id"], r["continuation"])
                                                                    for r in before]
    assert str(tmp_path) not in json.dumps(after, default=str)


def test_attacks_keyed_by_the_old_absolute_folder_are_taken_over_not_made_again(mini_stack, tmp_path: Path,
                                                                              monkeypatch) -> None:
    """Written before the rule in the place the warehouse was moved from: read as this model, taken over."""
    old = _home(tmp_path / "a" / "wh")
    with monkeypatch.context() as m:
        _as_written_before(m)
        _attack(old, old / "sandbox" / "toy-seed0" / "model", mini_stack)
    before = _rows(old)
    assert {r["model"] for r in before} == {str(old / "sandbox" / "toy-seed0" / "model")}  # as written then
    new = _moved(old, tmp_path)
    be = _Backend()
    s = _attack(new, new / "sandbox" / "toy-seed0" / "model", mini_stack, backend=be)
    assert (s.n_attacked, s.n_reproduced) == (4, 1)
    assert len(be.asked) == 1  # one attack made again, to see the model still writes the same: the rest reused
    after = _rows(new)
    assert len(Lake(new).partitions(TABLE)) == 1
    assert {r["model"] for r in after} == {"sandbox/toy-seed0/model"}
    assert [r["attack_id"] for r in after] == [make_key("mybench", r["item_id"], "sandbox/toy-seed0/model")
                                               for r in after]
    keep = ("item_id", "item_hash", "continuation", "n_tokens", "max_new_tokens", "prompt_tokens",
            "answer_prefix_share", "reproduced")
    assert [{k: r[k] for k in keep} for r in after] == [{k: r[k] for k in keep} for r in before]
    assert str(tmp_path) not in json.dumps(after, default=str)


def test_old_attacks_of_other_texts_budgets_or_another_model_are_replaced_once(mini_stack, tmp_path: Path,
                                                                               monkeypatch) -> None:
    home = _home(tmp_path / "wh")
    model = home / "models" / "lm"
    with monkeypatch.context() as m:
        _as_written_before(m)
        _attack(home, model, mini_stack)
    # as the old code wrote it, but one item's budget differs (another SLACK_TOKENS) and one item was edited since
    (part,) = Lake(home).partitions(TABLE)
    rows = _rows(home)
    rows = [{**r, "max_new_tokens": r["max_new_tokens"] + 1} if r["item_id"] == "fresh" else r for r in rows]
    Lake(home).write(TABLE, part, rows)
    edited = [i if i["id"] != "other" else {**i, "answer": "every pebble."} for i in ITEMS]
    be = _Backend()
    _attack(home, model, mini_stack, backend=be, items=edited)
    # the probe (echo), the other budget, the edited item; `more` is reused
    assert sorted(be.asked) == ["echo", "fresh", "other"]
    after = _rows(home)
    assert len(Lake(home).partitions(TABLE)) == 1 and len(after) == 4
    assert {r["model"] for r in after} == {"models/lm"}
    # a model that writes otherwise now (retrained in place): nothing is reused, one copy again
    absolute = str(model)
    Lake(home).write(TABLE, "bench--mybench--model--as-written-before", [
        {**r, "model": absolute, "attack_id": make_key("mybench", r["item_id"], absolute)} for r in _rows(home)])
    be = _Backend(knows=(), other="a new model")
    s = _attack(home, model, mini_stack, backend=be)
    assert sorted(be.asked) == ["echo", "fresh", "more", "other"] and s.n_reproduced == 0
    after = _rows(home)
    assert len(Lake(home).partitions(TABLE)) == 1
    assert [(r["model"], r["continuation"]) for r in after] == [("models/lm", "a new model")] * 4


def test_staging_reads_an_old_absolute_sandbox_spelling_and_the_key_as_one_model(mini_stack, tmp_path: Path,
                                                                                  monkeypatch) -> None:
    """A lake written before the rule can hold one benchmark's attacks under two places of one sandbox model
    (before and after a move): stg_contamination_attacks reads both as the key and keeps one spelling's rows
    whole (the newest), so fct_contamination_benchmarks has one model, each item attacked once."""
    from ingest.build import build
    from ingest.home import db_path

    old = _home(tmp_path / "a" / "wh")
    with monkeypatch.context() as m:
        _as_written_before(m)
        _attack(old, old / "sandbox" / "toy-seed0" / "model", mini_stack)
    new = _moved(old, tmp_path)
    lake = Lake(new)
    (part,) = lake.partitions(TABLE)
    moved = str(new / "sandbox" / "toy-seed0" / "model")
    lake.write(TABLE, "bench--mybench--model--new-place", [  # as the old code wrote a rerun after the move
        {**r, "model": moved, "attack_id": make_key("mybench", r["item_id"], moved), "reproduced": False,
         "created_at": r["created_at"].replace(year=r["created_at"].year + 1)}
        for r in lake.read(TABLE, part).to_pylist()])
    result = build(new, select=["stg_contamination_attacks", "+fct_contamination_benchmarks"], progress=False)
    assert result.success, result.failures
    with duckdb.connect(str(db_path(new)), read_only=True) as con:
        models = con.execute("select distinct model from stg_contamination_attacks").fetchall()
        bench = con.execute("select model, n_items, n_attacked, n_reproduced from fct_contamination_benchmarks"
                            ).fetchall()
        kept = con.execute("select distinct recorded_model from stg_contamination_attacks").fetchall()
    assert models == [("sandbox/toy-seed0/model",)]
    assert bench == [("sandbox/toy-seed0/model", 4, 4, 0)]  # one model, each item attacked once
    assert kept == [(moved,)]  # the newest spelling's rows, whole


@pytest.mark.parametrize("given", ["rel", "abs"])
def test_a_hub_name_or_outside_folder_keys_as_before(mini_stack, tmp_path: Path, given: str) -> None:
    """Guard: a hub name is recorded as given, a folder outside the warehouse by its absolute path."""
    home = _home(tmp_path / "wh")
    model = "EleutherAI/pythia-70m" if given == "rel" else str(mini_stack["model"])
    _attack(home, model, mini_stack)
    assert {r["model"] for r in _rows(home)} == {model}
