"""Review of ceaef9c (mixture inject keys its points relative, takes over the absolute spelling), b16952b
(fct_propensity.pm_differs_from_neutral follows the rule-of-three PM with no event), 25bb842, 37698c4 and
56123ee + 3b7548f (headline upper bounds rounded up).

Oracles are independent of the code under review: hand-counted rows (shares x domains x estimators), the lake's
own files, hand-computed PM bounds, and the printed interval read back as a number.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from ingest.lake import Lake
from ingest.mixture.sweep import TABLE
from tests.python.test_inject_model_key import DOMAINS, _inject, _rows, injected_as_before
from tests.python.test_headline_review import con, headline, propensity, render  # noqa: F401 (fixture)

ROOT = Path(__file__).resolve().parents[2]
SHARES = ("0", "0.1")  # test_inject_model_key's PLAN


def _partition_of(home: Path, value: str) -> str:
    lake = Lake(home)
    (part,) = [p for p in lake.partitions(TABLE) if lake.read(TABLE, p).to_pylist()[0]["value"] == value]
    return part


def _killed_before_its_record(home: Path, value: str) -> None:
    """The share's point as `Lake.write` leaves it when killed between renaming the Parquet file into place and
    writing its manifest record: the rows are visible to dbt's glob, the point is not done (Lake.is_done)."""
    lake = Lake(home)
    part = _partition_of(home, value)
    lake._manifest_path(TABLE, part).unlink()
    assert lake.partition_path(TABLE, part).exists() and not lake.is_done(TABLE, part)


# ------------------------------------------------------------------------------------------------ ceaef9c

def test_inject_replaces_a_partly_written_point_of_the_absolute_spelling(tmp_path: Path, monkeypatch) -> None:
    """An inject of the old version killed while writing share 0.1's point (Parquet in place, no record). The old
    version run again replaced it (the same partition). Now the point is written under the relative key and
    take_over_point skips the old partition because it has no record: its rows stay visible beside the new
    ones, the absolute folder among the models of fct_mixture_sweeps."""
    home = tmp_path / "wh"
    injected_as_before(home, monkeypatch)
    _killed_before_its_record(home, "0.1")
    res = _inject(home)
    assert res.computed == [0.1] and res.skipped == [0.0]
    rows = _rows(home)
    assert len(rows) == len(SHARES) * len(DOMAINS) * 1  # one estimator (cc): 8 rows, one copy of each
    assert all(r["model"].startswith("sandbox/") for r in rows), {r["model"] for r in rows}


def test_inject_after_a_move_replaces_a_partly_written_point_of_the_old_place(tmp_path: Path, monkeypatch) -> None:
    """The same after `mv` of the warehouse: the partly written point names the place the warehouse left. It has
    no record, so former_spellings (which reads the study from the record) does not see it either."""
    old = tmp_path / "a" / "wh"
    injected_as_before(old, monkeypatch)
    _killed_before_its_record(old, "0.1")
    new = tmp_path / "b" / "wh"
    new.parent.mkdir()
    shutil.move(str(old), str(new))
    _inject(new)
    rows = _rows(new)
    assert len(rows) == len(SHARES) * len(DOMAINS)
    assert all(r["model"].startswith("sandbox/") for r in rows), {r["model"] for r in rows}


def test_an_interrupted_replacement_after_a_move_still_reuses_the_old_samples(tmp_path: Path, monkeypatch) -> None:
    """ceaef9c: a point of other settings is replaced, 'reusing the samples drawn under the old spelling'. But
    take_over_point deletes the old point before the new one exists, and after a move the old place's spelling is
    found only through those points (former_spellings): interrupted once (Ctrl-C while estimating), the next
    run no longer knows the old runs, samples every share again and keeps two runs per model."""
    old = tmp_path / "a" / "wh"
    injected_as_before(old, monkeypatch)
    runs = {r["run_id"] for r in Lake(old).read("runs").to_pylist()}
    assert len(runs) == len(SHARES)
    new = tmp_path / "b" / "wh"
    new.parent.mkdir()
    shutil.move(str(old), str(new))

    def interrupted(**kw):
        raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr("ingest.mixture.inject.point_rows", interrupted)
        with pytest.raises(KeyboardInterrupt):
            _inject(new, estimators=("cc", "acc"))
    res = _inject(new, estimators=("cc", "acc"))
    assert res.computed == [0.0, 0.1]
    assert {r["run_id"] for r in Lake(new).read("runs").to_pylist()} == runs  # the old samples, no new run
    rows = _rows(new)
    assert len(rows) == len(SHARES) * len(DOMAINS) * 2 and {r["run_id"] for r in rows} == runs
    assert all(r["model"].startswith("sandbox/") for r in rows)


def test_a_sweep_replaces_a_partly_written_point_of_the_absolute_spelling(tmp_path: Path, monkeypatch) -> None:
    """`mixture sweep` shares take_over_point (the same early return): an old sweep's point killed before its
    record stays beside the point computed under the relative key."""
    from tests.python.test_model_key_leftovers import _sweep_warehouse
    from tests.python.test_model_key_leftovers_review import _old_sweep

    home = tmp_path / "wh"
    sweep, _ = _sweep_warehouse(home, monkeypatch)
    _old_sweep(home)
    lake = Lake(home)
    (part,) = lake.partitions(TABLE)
    lake._manifest_path(TABLE, part).unlink()
    assert "1 computed, 0 done before" in sweep(home)
    rows = Lake(home).read(TABLE).to_pylist()
    assert {r["model"] for r in rows} == {"sandbox/toy-seed0/model"}


# ------------------------------------------------------------------------------------------------ b16952b

def _ready_query(con, name: str) -> list[dict]:  # noqa: F811
    cur = con.execute((ROOT / "sql" / name).read_text())
    return [dict(zip([d[0] for d in cur.description], r)) for r in cur.fetchall()]


def test_propensity_by_setting_shows_the_interval_its_differs_column_reads(con) -> None:  # noqa: F811
    """sql/propensity_by_setting.sql prints fct_propensity's ci_low/ci_high beside pm_differs_from_neutral. Since
    b16952b a zero-event row's verdict follows the rule-of-three PM, so the query printed '[0.000, 0.000]' (which
    excludes 0.5) beside differs = false. The printed interval must be the one the verdict reads.
    Hand-computed: spec fmr u = 3/39, f_c's low end 0.0125 -> PM bound 0.0769/(0.0769+0.0125) = 0.860;
    unc fmr u = 3/158 -> 0.01899/(0.01899+0.0125) = 0.603."""
    rows = {(r["run_id"], r["metric"]): r for r in _ready_query(con, "propensity_by_setting.sql")}
    expected = {("spec", "fmr"): (3 / 39) / (3 / 39 + 0.0125), ("unc", "fmr"): (3 / 158) / (3 / 158 + 0.0125)}
    for key, bound in expected.items():
        r = rows[key]
        low, high = _printed_interval(r["ci_95_or_reason"])
        assert r["differs"] == (low > 0.5 or high < 0.5), r  # the verdict is the printed interval's
        assert bound <= high <= bound + 0.001, r  # the bound, rounded up at the third decimal
    for r in rows.values():  # every row: a printed interval agrees with its verdict
        if r["differs"] is not None:
            low, high = _printed_interval(r["ci_95_or_reason"])
            assert r["differs"] == (low > 0.5 or high < 0.5), r


def _printed_interval(text: str) -> tuple[float, float]:
    """The interval the query prints: '[a, b]', or with no event '[0, 0]' and the PM the sample still allows
    ('at most x', as sql/headline_metrics.sql prints 3/n): [0, x]."""
    most = re.search(r"at most ([0-9.]+)", text)
    if most:
        return 0.0, float(most.group(1))
    m = re.fullmatch(r"\[([0-9.]+), ([0-9.]+)\]", text)
    assert m, text
    return float(m.group(1)), float(m.group(2))


def test_the_marts_verdict_agrees_with_the_demo_reading(con) -> None:  # noqa: F811
    """Checked, holds: for every row with a PM, pm_differs_from_neutral is true exactly where the demo reads
    'below/above the attack', NULL where every round was skipped (f_p = f_c = 0: u / (u + 0) = 1, no
    division by zero)."""
    cur = con.execute("select * from fct_propensity")
    rows = [dict(zip([d[0] for d in cur.description], r)) for r in cur.fetchall()]
    assert rows
    for r in rows:
        reading = headline(r).reading
        if r["pm_differs_from_neutral"] is None:
            assert reading not in ("below the attack", "above the attack"), r
        else:
            assert r["pm_differs_from_neutral"] == (reading in ("below the attack", "above the attack")), r
    r50 = propensity(con, "spec", "r50")  # f_p = f_c = 0
    assert r50["pm_differs_from_neutral"] is None and r50["pm_upper_rule_of_three"] == pytest.approx(1.0)


# ------------------------------------------------------------------------------------------------ 56123ee

@pytest.mark.parametrize("x", [100 * 3 / 9, 100 * 3 / 7, 100 * 3 / 158, 100 * 3 / 2439, 3 / 39, 0.0999, 9.96,
                               0.995, 100.0, 7.5, 0.3])
def test_printed_upper_bounds_bound_and_stay_within_one_step(x: float) -> None:
    """Checked, holds: the printed '≤x' is >= x and at most one step of the last digit _num shows above it
    (hand rule: >= 10 integers, [1, 10) one decimal, < 1 two significant digits)."""
    from ingest.cli.headline_tables import _num_up

    printed = float(_num_up(x))
    step = 1.0 if x >= 10 else 0.1 if x >= 1 else 10 ** (int(f"{x:e}".split("e")[1]) - 1)
    assert x <= printed <= x + step + 1e-12, (x, printed)
