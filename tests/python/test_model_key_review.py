"""Review of b265c11/a9df3ad (model folders recorded relative to the warehouse): cases the commit's own test
(test_moved_warehouse_model.py) leaves out.

1. A run recorded before model paths were relative resumes once (its legacy fingerprint is kept and the model
   re-recorded relative); the same command run again must resume as well, not refuse with 'other parameters'.
2. `mixture sweep --run` of a run whose model is inside the warehouse: its sweep partitions, rows and config
   key must not name the warehouse's place, or a moved warehouse recomputes every point and keeps both.
3. `ingest.home.model_key` and macros/model_key.sql agree on a recorded name with a trailing newline
   (Python's `$` matches before a final newline, RE2's does not).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb

from ingest.lake import Lake


class _Echo:
    name = "echo"

    def generate(self, requests, sampling):
        from ingest.generate.backends import GenOutput

        return [GenOutput(r.key, tuple(r.prompt_ids), f"sample {r.seed}", "length") for r in requests]


def _echo_run(lake: Lake, model: Path):
    from ingest.generate.backends import SamplingConfig
    from ingest.generate.runner import PromptUnit, RunSpec, run_generation

    spec = RunSpec("r", str(model), "unconditional", "echo", None, SamplingConfig(max_new_tokens=4), chunk_size=2)
    units = [PromptUnit("p", (1, 2), 3)]
    return spec, units, run_generation(lake, _Echo(), spec, units, progress=False)


def test_a_legacy_run_resumes_again_after_it_was_re_recorded_relative(tmp_path: Path) -> None:
    old = tmp_path / "a" / "wh"
    (old / "models" / "lm").mkdir(parents=True)
    spec, units, _ = _echo_run(Lake(old), old / "models" / "lm")
    (row,) = Lake(old).read("runs").to_pylist()
    legacy_fp = spec.fingerprint(units)  # as lmaudit recorded the run before: the absolute folder
    Lake(old).write("runs", "run--r", [{**row, "model": str(old / "models" / "lm"), "sampling_params": json.dumps(
        {**json.loads(row["sampling_params"]), "fingerprint": legacy_fp})}])
    new = tmp_path / "b" / "wh"
    new.parent.mkdir()
    shutil.move(str(old), str(new))
    _, _, moved = _echo_run(Lake(new), new / "models" / "lm")  # resumes, re-recorded relative
    assert moved.n_chunks_skipped == 2 and Lake(new).read("runs").to_pylist()[0]["model"] == "models/lm"
    _, _, again = _echo_run(Lake(new), new / "models" / "lm")  # the same command once more
    assert again.n_chunks_skipped == 2
    _, _, here = _echo_run(Lake(new), new / "models" / "lm")
    assert here.n_chunks_skipped == 2


def test_model_key_agrees_with_the_macro_on_a_trailing_newline() -> None:
    from ingest.home import SANDBOX_MODEL, model_key

    recorded = "/w/old/sandbox/tiny-seed0/model\n"
    sql = "select coalesce(nullif(regexp_extract(?, ?, 1), ''), ?)"
    with duckdb.connect() as con:
        (got,) = con.execute(sql, [recorded, SANDBOX_MODEL.pattern, recorded]).fetchone()
    assert model_key(Path("/w/here"), recorded) == got
