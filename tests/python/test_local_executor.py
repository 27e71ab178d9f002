"""The local process pool (`--workers N`): results in batch order, a dead worker stops the step with one line
instead of a hang, and kept workers serve several `map` calls (one model load per process for all settings)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ingest.errors import StepFailed
from ingest.executors import LocalExecutor, WorkerDied, WorkerSpec


class Square:
    """A worker: squares a batch, and says which process did it."""

    def __init__(self, offset: int = 0):
        self.offset = offset

    def __call__(self, batch: list[int]) -> tuple[int, list[int]]:
        return os.getpid(), [x * x + self.offset for x in batch]


class DiesOn:
    """A worker that ends its own process with a signal on one batch, as a SIGBUS or the OOM killer would."""

    def __init__(self, bad: int, sig: int):
        self.bad, self.sig = bad, sig

    def __call__(self, batch: list[int]) -> list[int]:
        if self.bad in batch:
            os.kill(os.getpid(), self.sig)
        return batch


def test_results_come_in_batch_order_beyond_the_window() -> None:
    batches = [[i, i + 1] for i in range(0, 40, 2)]  # 20 batches, 4 submitted ahead for 2 workers
    got = list(LocalExecutor(workers=2).map(WorkerSpec(Square), batches))
    assert [r for _, r in got] == [[x * x for x in b] for b in batches]
    assert os.getpid() not in {pid for pid, _ in got}


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGBUS])
def test_a_dead_worker_stops_the_step_instead_of_hanging(sig) -> None:
    """`multiprocessing.Pool` replaced the dead process, lost its batch and waited forever. Run in a child with a
    timeout so that a regression fails here instead of hanging the suite."""
    code = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from test_local_executor import DiesOn
        from ingest.executors import LocalExecutor, WorkerSpec, WorkerDied
        got = []
        try:
            for r in LocalExecutor(workers=2).map(WorkerSpec(DiesOn, (7, {int(sig)})), [[i] for i in range(12)]):
                got.append(r)
        except WorkerDied as e:
            print("died", len(got), e)
    """)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    out = p.stdout.strip()
    assert out.startswith("died "), out
    n_before = int(out.split()[1])
    assert n_before <= 7  # results stop at (or before) the lost batch: nothing after it is taken as done
    assert "run the command again to resume" in out


def test_worker_died_is_a_failed_step() -> None:
    assert issubclass(WorkerDied, StepFailed) and WorkerDied().exit_code == 1
    assert "\n" not in str(WorkerDied())


def test_kept_workers_serve_several_calls_and_a_new_spec_gets_new_ones() -> None:
    ex = LocalExecutor(workers=2, keep_workers=True)
    try:
        first = {pid for pid, _ in ex.map(WorkerSpec(Square), [[1], [2], [3], [4]])}
        # The pool's processes, not only those that happened to take a batch: a spawned worker still importing
        # can leave all four batches to the other one (seen in CI), and then serve the next call.
        pool = ex._kept[1]
        started = set(pool._processes)
        assert first <= started
        again = list(ex.map(WorkerSpec(Square), [[5], [6]]))
        assert ex._kept[1] is pool  # the same pool: its workers keep what their spec loaded
        kept = set(pool._processes)
        assert {pid for pid, _ in again} <= kept and len(kept) <= 2
        assert [r for _, r in again] == [[25], [36]]
        other = list(ex.map(WorkerSpec(Square, (1,)), [[2]]))
        assert other[0][1] == [5] and other[0][0] not in kept  # another spec: new processes
    finally:
        ex.close()
    assert ex._kept == (None, None)


def test_one_worker_runs_in_this_process() -> None:
    got = list(LocalExecutor(workers=1).map(WorkerSpec(Square), [[3]]))
    assert got == [(os.getpid(), [9])]
