"""A disk that fills up during `lmaudit build`: a non-zero exit and one line naming the cause, at any point
(dbt's own files, or DuckDB's write-ahead log while a model commits), and the lake untouched.

A real full disk: a small tmpfs mounted for the test (needs root and mount permission; skipped otherwise)."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import run_cli


def _mount(path: Path, size: str) -> bool:
    path.mkdir(parents=True, exist_ok=True)
    if shutil.which("mount") is None:
        return False
    return subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                          capture_output=True).returncode == 0


def _lake_digest(home: Path) -> dict[str, str]:
    return {str(p.relative_to(home)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted((home / "lake").rglob("*")) if p.is_file()}


@pytest.mark.slow
@pytest.mark.parametrize("size", ["4M", "7200K"])  # dbt's manifest does not fit / a model's commit does not
def test_build_on_a_full_disk_is_one_line_and_keeps_the_lake(tmp_path, size) -> None:
    mnt = tmp_path / "disk"
    if not _mount(mnt, size):
        pytest.skip("cannot mount a tmpfs here (needs root and mount permission)")
    try:
        gens = tmp_path / "g.jsonl"
        gens.write_text("".join(json.dumps({"generation_id": f"g{i}", "prompt_id": "p0", "sample_idx": i,
                                            "text": "hello world " * 20}) + "\n" for i in range(50)))
        home = mnt / "w"
        run_cli("import", "generations", str(gens), "--run-id", "r1", "--model", "m", "--setting",
                "unconditional", home=home, check=True)
        before = _lake_digest(home)
        proc = run_cli("build", home=home)
        assert proc.returncode != 0
        err = [x for x in proc.stderr.splitlines() if x.strip()]
        assert len(err) == 1 and err[0].startswith("error: "), proc.stderr
        assert "No space left on device" in err[0], err[0]
        assert "Traceback" not in proc.stdout + proc.stderr
        assert _lake_digest(home) == before
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)
