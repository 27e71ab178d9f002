"""Report figures: which bars a run gets when a model has several runs of one setting."""

from __future__ import annotations

from ingest.report.figures import _group_runs
from ingest.report.plotting import setting_order as _order


def test_runs_of_one_setting_get_their_own_groups():
    rows = [{"model": "m", "setting": "unconditional", "run_id": "sandbox-default-unconditional"},
            {"model": "m", "setting": "unconditional", "run_id": "sandbox-default-neutral"},
            {"model": "m", "setting": "prefix", "run_id": "sandbox-default-prefix"},
            {"model": "m", "setting": "generic", "run_id": "sandbox-default-generic"}]
    key = _group_runs(rows, "setting", "run_id")
    assert [r[key] for r in rows] == ["unconditional", "unconditional (neutral)", "prefix", "generic"]
    assert _order(r[key] for r in rows) == ["unconditional", "unconditional (neutral)", "generic", "prefix"]


def test_one_run_per_model_and_setting_keeps_the_setting():
    rows = [{"model": "a", "setting": "unconditional", "run_id": "a-unconditional"},
            {"model": "b", "setting": "unconditional", "run_id": "b-unconditional"}]
    key = _group_runs(rows, "setting", "run_id")
    assert {r[key] for r in rows} == {"unconditional"}
