"""How many models each process builds during `lmaudit generate` (issue 29 item 1): the driver none when workers
generate (the tokenizer only), each worker process or Ray actor exactly one however many batches it runs, and the
driver exactly one when it generates itself.

The count comes from the processes themselves: the backends append `PID<TAB>KIND` to $LMAUDIT_LOAD_LOG at each
model, engine or tokenizer-only construction (ingest/generate/backends.py), and worker processes and Ray actors
inherit the variable. The command runs as a user runs it, in its own process (whose pid is the driver's), with
two settings (Ray actors are kept from one setting to the next) and three chunks of work in the first, so that
some actor runs more than one batch. The hf cases run in CI; the vLLM cases need a
Python with vLLM (LMAUDIT_VLLM_PYTHON, as in test_vllm_backend.py) and are skipped without one.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from ingest.corpora import register_corpus
from ingest.lake import Lake

from conftest import REPO

pytestmark = pytest.mark.slow
VLLM_PYTHON = os.environ.get("LMAUDIT_VLLM_PYTHON")
N_GENERATIONS = 600  # 256 per chunk: three chunks, more than the two workers


@pytest.fixture
def prompts_home(mini_stack, home) -> Path:
    from ingest.prompts.build import build_prompt_set

    lake = Lake(home)
    register_corpus(lake, "mini", [mini_stack["index"]])
    build_prompt_set(lake, "mini", "unconditional", n=1)
    build_prompt_set(lake, "mini", "prefix", n=2)
    return home


def _generate(python: str, home: Path, model: Path, log: Path, *extra: str) -> tuple[int, dict[int, Counter]]:
    """Run `lmaudit generate` in a new process; return its pid and, per process, the kinds of what it built."""
    args = [python, "-m", "ingest.cli.main", "generate", "--model", str(model), "--corpus", "mini", "--settings",
            "unconditional,prefix", "--n-samples", "2", "--n-generations", str(N_GENERATIONS), "--max-new-tokens", "2",
            "--run-prefix", "c", *extra]
    env = {**os.environ, "LMAUDIT_HOME": str(home), "LMAUDIT_LOAD_LOG": str(log), "PYTHONPATH": str(REPO),
           "COLUMNS": "200"}
    proc = subprocess.Popen(args, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate(timeout=900)
    assert proc.returncode == 0, out[-3000:] + err[-3000:]
    assert f"{N_GENERATIONS} generations (0/3 chunks already done)" in out and "c-prefix: 4 generations" in out, out
    built: dict[int, Counter] = {}
    for line in log.read_text().splitlines():
        pid, kind = line.split("\t")
        built.setdefault(int(pid), Counter())[kind] += 1
    return proc.pid, built


def _check(driver: int, built: dict[int, Counter], kind: str, executor: str, workers: int) -> None:
    if workers == 0:  # the driver generates itself
        assert built == {driver: Counter({kind: 1})}
        return
    assert built.get(driver) == Counter({"tokenizer": 1}), f"the driver built a model: {built}"
    others = {pid: c for pid, c in built.items() if pid != driver}
    if executor == "ray":  # the actor pool hands every actor a batch at once: each one builds its model
        assert len(others) == workers, f"expected {workers} actors: {built}"
    else:  # a pool process still loading when the others have done every batch is ended before it notes a model
        assert 1 <= len(others) <= workers, f"expected 1 to {workers} worker processes: {built}"
    for pid, c in others.items():
        assert c == Counter({kind: 1}), f"process {pid} built {dict(c)}"


# (executor, workers); 0: the driver alone. A local pool (`--workers 2`) takes the driver's path of the Ray case
# (ingest/generate/backends.py driver_backend) and costs two more torch imports, so it is left out.
HF_CASES = [("local", 0), ("ray", 2)]


def _extra(executor: str, workers: int) -> list[str]:
    return ["--executor", executor, "--workers", str(max(workers, 1))]


@pytest.mark.parametrize("executor, workers", HF_CASES)
def test_hf_models_built_per_process(prompts_home, mini_stack, tmp_path, executor, workers) -> None:
    if executor == "ray":
        pytest.importorskip("ray")
    driver, built = _generate(sys.executable, prompts_home, mini_stack["model"], tmp_path / "loads.tsv",
                              *_extra(executor, workers), "--batch-size", "64")
    _check(driver, built, "hf", executor, workers)


@pytest.mark.skipif(not VLLM_PYTHON, reason="set LMAUDIT_VLLM_PYTHON to a Python with vLLM installed")
@pytest.mark.parametrize("executor, workers", [("local", 0), ("ray", 2)])
def test_vllm_engines_built_per_process(prompts_home, mini_stack, tmp_path, executor, workers) -> None:
    from test_vllm_backend import vllm_test_model

    if executor == "ray" and subprocess.run([VLLM_PYTHON, "-c", "import ray"], capture_output=True).returncode:
        pytest.skip(f"{VLLM_PYTHON} has no ray (scripts/setup_vllm_cpu.sh installs it)")
    model = vllm_test_model(mini_stack, tmp_path / "gpt2-vllm")
    engine = [a for kv in os.environ.get("LMAUDIT_VLLM_ENGINE_ARGS", "gpu_memory_utilization=0.05").split()
              for a in ("--engine-arg", kv)]
    driver, built = _generate(VLLM_PYTHON, prompts_home, model, tmp_path / "loads.tsv", "--backend", "vllm",
                              *_extra(executor, workers), *engine)
    _check(driver, built, "vllm", executor, workers)
