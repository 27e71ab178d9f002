"""Review of 3954960 (`lmaudit contamination --model` records the model as runs do and takes over the attacks
filed under another spelling model_key reads as this model; stg_contamination_attacks keeps one spelling per
(benchmark, model) through `one_model_spelling(..., within=[...])`).

Expectations are hand-counted or brute force (what the stand-in backend writes now, the rows as they were
written), never the code's own output. The index, the tracing, the lake and dbt are real (the mini stack); the
generation backend is a stand-in that counts what it is asked to generate.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import duckdb
import pytest

from ingest.generate.backends import GenOutput
from ingest.lake import Lake
from tests.python.test_contamination_model_key import _as_written_before, _home, _moved

TABLE = "contamination_attacks"
ITEMS = [{"id": "echo", "input": "The cat sat on the", "answer": "mat."},
         {"id": "fresh", "input": "Quillon zebras negotiate turquoise ladders", "answer": "Nine lanterns."},
         {"id": "other", "input": "The harbourmaster counts", "answer": "every obsidian pebble twice."},
         {"id": "more", "input": "Seventeen violins hum", "answer": "beneath marmalade clouds."}]
ANSWERS = {i["id"]: i["answer"] for i in ITEMS}
REPO = Path(__file__).resolve().parents[2]


class _Backend:
    """Greedy stand-in: writes `writes[item]` when given, else the answer for the items it knows, else `other`;
    one token per byte of the prompt, `max_new_tokens` tokens out."""

    bos_id = 0

    def __init__(self, knows=("echo",), other: str = "something else", writes: dict | None = None):
        self.knows, self.other, self.writes, self.asked = set(knows), other, dict(writes or {}), []

    def encode(self, text: str) -> list[int]:
        return list(text.encode())

    def text(self, key: str, answer: str) -> str:
        return self.writes.get(key, answer if key in self.knows else self.other)

    def generate(self, requests, sampling):
        self.asked += [r.key for r in requests]
        return [GenOutput(r.key, tuple(range(sampling.max_new_tokens)), self.text(r.key, self.answers[r.key]),
                          "length") for r in requests]


def _attack(home: Path, model, stack, backend=None, items=ITEMS, name: str = "mybench"):
    from ingest.contamination.run import run_contamination

    bench = home.parent / f"{name}.jsonl"
    bench.write_text("".join(json.dumps(i) + "\n" for i in items))
    backend = backend or _Backend()
    backend.answers = {i["id"]: i["answer"] for i in items}
    return run_contamination(Lake(home), bench, (str(stack["index"]),), backend=backend, model=str(model),
                             progress=False)


def _rows(home: Path, part: str | None = None) -> list[dict]:
    return sorted(Lake(home).read(TABLE, part).to_pylist(), key=lambda r: (r["benchmark"], r["item_id"]))


def _lake_files(home: Path) -> dict[str, bytes]:
    """Every table partition and manifest record of the lake, by path (what a reader can see)."""
    root = home / "lake"
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.relative_to(root).parts[0] not in ("_tmp", "_txn")}


def _build(home: Path) -> list[tuple]:
    from ingest.build import build
    from ingest.home import db_path

    result = build(home, select=["stg_contamination_attacks", "+fct_contamination_benchmarks"], progress=False)
    assert result.success, result.failures
    with duckdb.connect(str(db_path(home)), read_only=True) as con:
        return con.execute("select benchmark, model, n_items, n_attacked, n_reproduced "
                           "from fct_contamination_benchmarks order by benchmark, model").fetchall()


# ------------------------------------------------------------------------------------ items changed between runs

def test_items_added_removed_and_edited_are_counted_once_after_a_takeover(mini_stack, tmp_path: Path,
                                                                          monkeypatch) -> None:
    """Old attacks (absolute spelling) of 4 items; the benchmark now lacks `more`, has `other` edited and a new
    item `added`. Hand count: echo is the probe (made again), fresh is reused, other and added are attacked;
    `more`'s and the old `other`'s attacks are gone. The model knows echo and fresh: 2 of 4 reproduced."""
    home = _home(tmp_path / "wh")
    model = home / "models" / "lm"
    with monkeypatch.context() as m:
        _as_written_before(m)
        _attack(home, model, mini_stack, backend=_Backend(knows=("echo", "fresh")))
    (old_part,) = Lake(home).partitions(TABLE)
    old_fresh = [r for r in _rows(home) if r["item_id"] == "fresh"][0]
    items = [ITEMS[0], ITEMS[1], {**ITEMS[2], "answer": "every pebble."},
             {"id": "added", "input": "Marmalade clouds drift", "answer": "over the violins."}]
    be = _Backend(knows=("echo", "fresh"))
    s = _attack(home, model, mini_stack, backend=be, items=items)
    assert sorted(be.asked) == ["added", "echo", "other"]
    assert (s.n_attacked, s.n_reproduced) == (4, 2)
    parts = Lake(home).partitions(TABLE)
    assert len(parts) == 1 and parts != [old_part]
    rows = _rows(home)
    assert [r["item_id"] for r in rows] == ["added", "echo", "fresh", "other"]
    assert {r["model"] for r in rows} == {"models/lm"}
    got = {r["item_id"]: r["continuation"] for r in rows}
    assert got == {"added": "something else", "echo": "mat.", "fresh": "Nine lanterns.", "other": "something else"}
    fresh = [r for r in rows if r["item_id"] == "fresh"][0]
    assert fresh["created_at"] == old_fresh["created_at"]  # taken over: made then
    assert _build(home) == [("mybench", "models/lm", 4, 4, 2)]


# ------------------------------------------------------------------------------- two benchmarks, one model

def test_a_takeover_of_one_benchmark_leaves_another_benchmarks_attacks_and_marts_keep_both(
        mini_stack, tmp_path: Path, monkeypatch) -> None:
    """Benchmarks a and b attacked by models/lm as the old code recorded it (absolute); a rerun of a takes over
    a's partition only. Staging picks one spelling per (benchmark, model): b's old spelling is the only one b
    has, so b keeps its 4 attacks although a's spelling is newer. Hand count: echo reproduced in each."""
    home = _home(tmp_path / "wh")
    model = home / "models" / "lm"
    with monkeypatch.context() as m:
        _as_written_before(m)
        _attack(home, model, mini_stack, name="a")
        _attack(home, model, mini_stack, name="b")
    b_part = [p for p in Lake(home).partitions(TABLE) if _rows(home, p)[0]["benchmark"] == "b"]
    b_before = _rows(home, b_part[0])
    be = _Backend()
    _attack(home, model, mini_stack, backend=be, name="a")
    assert be.asked == ["echo"]
    assert _rows(home, b_part[0]) == b_before
    rows = _rows(home)
    assert [(r["benchmark"], r["model"]) for r in rows] == \
        [("a", "models/lm")] * 4 + [("b", str(model.resolve()))] * 4
    assert _build(home) == [("a", "models/lm", 4, 4, 1), ("b", "models/lm", 4, 4, 1)]


# ------------------------------------------------------------------------------------ a rerun, same spelling

def test_a_rerun_with_the_same_spelling_replaces_its_partition_and_the_former_one(mini_stack, tmp_path: Path,
                                                                                   monkeypatch) -> None:
    """Own partition (key spelling) and a former one (absolute): the rerun writes one partition of 4 rows, made
    now by the model as it writes now (here: it forgot echo)."""
    home = _home(tmp_path / "wh")
    model = home / "models" / "lm"
    with monkeypatch.context() as m:
        _as_written_before(m)
        _attack(home, model, mini_stack)
    _attack(home, model, mini_stack)
    assert len(Lake(home).partitions(TABLE)) == 1  # the first rerun took over
    # the old absolute partition again, beside the key's own
    absolute = str(model.resolve())
    Lake(home).write(TABLE, "bench--mybench--model--again", [
        {**r, "model": absolute, "attack_id": r["attack_id"] + "x"} for r in _rows(home)])
    be = _Backend(knows=())
    s = _attack(home, model, mini_stack, backend=be)
    # the probe (echo) now comes out otherwise: nothing is reused, every item is attacked again
    assert s.n_reproduced == 0 and sorted(be.asked) == ["echo", "fresh", "more", "other"]
    assert len(Lake(home).partitions(TABLE)) == 1
    assert [(r["model"], r["continuation"]) for r in _rows(home)] == [("models/lm", "something else")] * 4


# ------------------------------------------------------------------------------- the transaction fails midway

@pytest.mark.parametrize("fails", ["write", "delete"])
def test_a_takeover_that_fails_midway_leaves_the_lake_as_it_was(mini_stack, tmp_path: Path, monkeypatch,
                                                                 fails: str) -> None:
    """The new attack partition's write, or the former partition's delete, raises inside the transaction:
    every partition and record is byte for byte as before (no half takeover, no second copy); a rerun then
    leaves one copy of 4 rows."""
    home = _home(tmp_path / "wh")
    model = home / "models" / "lm"
    with monkeypatch.context() as m:
        _as_written_before(m)
        _attack(home, model, mini_stack)
    before = _lake_files(home)
    with monkeypatch.context() as m:
        real = getattr(Lake, fails)

        def broken(self, table, partition, *a, **k):
            if table == TABLE and self._txn is not None:
                raise OSError(28, "No space left on device")
            return real(self, table, partition, *a, **k)

        m.setattr(Lake, fails, broken)
        with pytest.raises(OSError):
            _attack(home, model, mini_stack)
    assert _lake_files(home) == before
    _attack(home, model, mini_stack)
    assert len(Lake(home).partitions(TABLE)) == 1 and len(_rows(home)) == 4


# ------------------------------------------------------------------ another warehouse's sandbox of the same name

def test_attacks_of_another_warehouses_sandbox_model_still_on_disk_are_not_taken_over(mini_stack,
                                                                                      tmp_path: Path) -> None:
    """This lake holds attacks of /…/other/wh/sandbox/toy-seed0/model (a folder outside the warehouse, recorded
    absolute; that warehouse is still there): another model, although model_key reads its path as the same
    key. Attacking this warehouse's own sandbox/toy-seed0/model must neither reuse those attacks nor delete
    them (ingest.mixture.sweep.former_spellings refuses such a spelling: 'never one still there elsewhere')."""
    home = _home(tmp_path / "wh")
    other = _home(tmp_path / "other" / "wh")
    theirs = other / "sandbox" / "toy-seed0" / "model"
    _attack(home, theirs, mini_stack, backend=_Backend(knows=("echo", "fresh")))
    (their_part,) = Lake(home).partitions(TABLE)
    their_rows = _rows(home, their_part)
    assert {r["model"] for r in their_rows} == {str(theirs.resolve())}
    be = _Backend(knows=("echo",))
    _attack(home, home / "sandbox" / "toy-seed0" / "model", mini_stack, backend=be)
    assert sorted(be.asked) == ["echo", "fresh", "more", "other"]  # nothing of the other model reused
    assert their_part in Lake(home).partitions(TABLE)
    assert _rows(home, their_part) == their_rows
    ours = [r for r in _rows(home) if r["model"] == "sandbox/toy-seed0/model"]
    assert [(r["item_id"], r["reproduced"]) for r in ours] == [
        ("echo", True), ("fresh", False), ("more", False), ("other", False)]


def test_a_sandbox_model_moved_from_a_place_now_gone_is_still_taken_over(mini_stack, tmp_path: Path,
                                                                         monkeypatch) -> None:
    """Guard for the fix above: the old absolute spelling of the place the warehouse was moved from (gone),
    and one under this warehouse, are this model: taken over, one copy."""
    old = _home(tmp_path / "a" / "wh")
    with monkeypatch.context() as m:
        _as_written_before(m)
        _attack(old, old / "sandbox" / "toy-seed0" / "model", mini_stack)
    new = _moved(old, tmp_path)
    here = str(new / "sandbox" / "toy-seed0" / "model") + "/"  # as given with a slash, under this warehouse
    lake = Lake(new)
    lake.write(TABLE, "bench--mybench--model--here", [
        {**r, "model": here, "attack_id": r["attack_id"] + "h"} for r in _rows(new)])
    be = _Backend()
    _attack(new, new / "sandbox" / "toy-seed0" / "model", mini_stack, backend=be)
    assert be.asked == ["echo"]
    assert len(Lake(new).partitions(TABLE)) == 1
    assert {r["model"] for r in _rows(new)} == {"sandbox/toy-seed0/model"} and len(_rows(new)) == 4


@pytest.mark.xfail(strict=True, reason="judgement call: attacking another warehouse's sandbox model (an outside "
                   "folder, recorded absolute) takes over and deletes this warehouse's own sandbox model's "
                   "attacks (recorded relative), because model_key reads both as one key; "
                   "ingest.mixture.sweep.former_spellings accepts a relative former spelling the same way, and "
                   "the marts conflate the two models anyway")
def test_attacking_another_warehouses_sandbox_model_keeps_this_warehouses_own_attacks(mini_stack,
                                                                                       tmp_path: Path) -> None:
    home = _home(tmp_path / "wh")
    other = _home(tmp_path / "other" / "wh")
    _attack(home, home / "sandbox" / "toy-seed0" / "model", mini_stack)
    (own,) = Lake(home).partitions(TABLE)
    own_rows = _rows(home, own)
    be = _Backend()
    _attack(home, other / "sandbox" / "toy-seed0" / "model", mini_stack, backend=be)
    assert own in Lake(home).partitions(TABLE) and _rows(home, own) == own_rows
    assert sorted(be.asked) == ["echo", "fresh", "more", "other"]


# ----------------------------------------------------------------------------------------------- the guard

@pytest.mark.xfail(strict=True, reason="judgement call (documented design): one re-made attack vouches for all; "
                   "attacks made under other decoding (vllm vs hf, another device) that agree on the probe "
                   "item but not on others are reused as if the model wrote them now")
def test_reused_attacks_are_what_the_model_writes_now(mini_stack, tmp_path: Path, monkeypatch) -> None:
    old = _home(tmp_path / "a" / "wh")
    with monkeypatch.context() as m:
        _as_written_before(m)  # made by another decoding: agrees on echo, not on fresh
        _attack(old, old / "models" / "lm", mini_stack, backend=_Backend(writes={"fresh": "Nine lamps."}))
    be = _Backend(knows=("echo", "fresh"))
    _attack(old, old / "models" / "lm", mini_stack, backend=be)
    # brute force: each row is what the backend writes now for its item
    assert {r["item_id"]: r["continuation"] for r in _rows(old)} == {
        i: be.text(i, ANSWERS[i]) for i in ANSWERS}


@pytest.mark.xfail(strict=True, reason="judgement call: the probe is checked against the newest former "
                   "partition's attack of its item, but the other items' reused attacks may come from an older "
                   "former partition (another spelling, written before the model was retrained) that no "
                   "re-made attack vouches for")
def test_the_probe_vouches_only_for_the_partition_it_came_from(mini_stack, tmp_path: Path, monkeypatch) -> None:
    home = _home(tmp_path / "wh")
    model = home / "models" / "lm"
    with monkeypatch.context() as m:
        _as_written_before(m)  # model v1, the benchmark's 4 items, under the absolute spelling
        _attack(home, model, mini_stack, backend=_Backend(knows=()))
    # later, model v2 (knows echo and fresh), the benchmark then held echo only, under a slash spelling
    (part,) = Lake(home).partitions(TABLE)
    v1 = _rows(home, part)
    slash = str(model.resolve()) + "/"
    echo = [r for r in v1 if r["item_id"] == "echo"][0]
    Lake(home).write(TABLE, "bench--mybench--model--slash", [
        {**echo, "model": slash, "attack_id": echo["attack_id"] + "s", "continuation": "mat.", "reproduced": True,
         "answer_prefix_share": 1.0, "created_at": echo["created_at"].replace(year=echo["created_at"].year + 1)}])
    be = _Backend(knows=("echo", "fresh"))
    _attack(home, model, mini_stack, backend=be)
    assert {r["item_id"]: r["continuation"] for r in _rows(home)} == {
        i: be.text(i, ANSWERS[i]) for i in ANSWERS}


# ------------------------------------------------------------------------- the macro's two other callers

def _render(src: str, *args, **kwargs) -> str:
    import jinja2

    env = jinja2.Environment(extensions=["jinja2.ext.do"])
    return str(getattr(env.from_string(src).module, "one_model_spelling")(*args, **kwargs))


@pytest.mark.parametrize("args", [("keyed",), ("keyed", "created_at")])
def test_one_model_spelling_renders_as_before_for_its_other_callers(args) -> None:
    """stg_mixtures_documented calls one_model_spelling('keyed'), stg_tokenizer_mixture_estimates
    one_model_spelling('keyed', 'created_at'): the macro before 3954960 and now render the same text."""
    before = subprocess.run(["git", "show", "3954960^:macros/one_model_spelling.sql"], cwd=REPO,
                            capture_output=True, text=True, check=True).stdout
    now = (REPO / "macros" / "one_model_spelling.sql").read_text()
    assert _render(now, *args) == _render(before, *args)


def test_within_picks_one_spelling_per_benchmark_brute_force() -> None:
    """The rendered macro with within=['benchmark'] on random rows against a Python brute force of its rule:
    per (benchmark, model) the spelling with the newest row, then the key as written, then the greatest."""
    import random

    src = (REPO / "macros" / "one_model_spelling.sql").read_text()
    sql = _render(src, "keyed", "created_at", within=["benchmark"])
    rng = random.Random(7)
    with duckdb.connect() as con:
        for trial in range(30):
            rows = [(i, rng.choice(["a", "b"]), rng.choice(["m", "n", None]),
                     rng.choice(["m", "n", "/x/m", "/y/m", "/x/n", None]), rng.choice([1, 2, 3, None]))
                    for i in range(rng.randint(1, 12))]
            con.execute("create or replace table keyed (id int, benchmark varchar, model varchar, "
                        "recorded_model varchar, created_at int)")
            if rows:
                con.executemany("insert into keyed values (?, ?, ?, ?, ?)", rows)
            got = sorted(r[0] for r in con.execute(f"select id from ({sql})").fetchall())
            want = []
            for b, m in {(r[1], r[2]) for r in rows}:
                group = [r for r in rows if (r[1], r[2]) == (b, m)]
                spellings = {r[3] for r in group}

                def rank(s, group=group, m=m):
                    newest = max((r[4] for r in group if r[3] == s and r[4] is not None), default=None)
                    return (newest is not None, newest or 0, s is not None and m is not None and s == m,
                            s is not None, s or "")

                best = max(spellings, key=rank)
                want += [r[0] for r in group if r[3] == best]
            assert got == sorted(want), (trial, rows)
