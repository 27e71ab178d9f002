"""`scripts/gpu_check.sh` cannot rot: its CPU dry run (GPU_CHECK_DEVICE=cpu) runs here, so a change to a command
it calls (prompt sets, generate, trace) fails CI instead of failing on the rare day a GPU is lent."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import seed_tiny_sandbox

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]


def test_gpu_check_dry_run_on_cpu(tmp_path: Path, tiny_sandbox: Path) -> None:
    seed_tiny_sandbox(tiny_sandbox, tmp_path / "wh")  # its `sandbox build` step is a cache hit here
    env = dict(os.environ, GPU_CHECK_DEVICE="cpu", GPU_CHECK_HOME=str(tmp_path / "wh"), GPU_CHECK_PROMPTS="3",
               GPU_CHECK_SAMPLES="2", GPU_CHECK_UNCOND="4", GPU_CHECK_MAX_NEW="16", GPU_CHECK_REQUIRE_VLLM="0",
               VIRTUAL_ENV=str(Path(sys.executable).parent.parent),
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    env.pop("LMAUDIT_VLLM_PYTHON", None)  # the hf backend only: vLLM on CPU has its own opt-in test
    proc = subprocess.run(["bash", str(REPO / "scripts" / "gpu_check.sh")], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=1500)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert "counts agree" in out and "every generation traced" in out, out[-2000:]
    assert "hf:" in out and "tokens/s" in out, out[-2000:]
    assert "ok in" in out
    # the Ray step (ray is a test dependency, so it always runs here): the driver builds no model, the actor one
    assert "hf on Ray: models built per process: driver 0, actor 1" in out, out[-2000:]
