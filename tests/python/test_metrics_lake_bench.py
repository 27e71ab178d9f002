"""benchmarks/metrics_lake.py must not read as a measurement when its build fails: exit non-zero, one line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_a_failed_build_exits_non_zero_with_one_line(tmp_path: Path) -> None:
    # an unknown var makes `lmaudit build` refuse before dbt starts (exit 2): the fastest failing build
    proc = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "metrics_lake.py"), "--warehouse", str(tmp_path),
         "--skip-write", "--vars", "{propme_no_such_var: 1}"],
        cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines()[-1] == "error: lmaudit build failed (exit 2); its output is above"
