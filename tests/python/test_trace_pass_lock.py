"""Two traces of one tracing pass in one warehouse run one after the other (ingest/trace/passlock.py): the
second waits, saying so, and writes only after the first has ended; a trace of another pass (other
parameters) does not wait. Oracle: the lake's own rows, read while the lock is held and after it is released."""

from __future__ import annotations

import fcntl
import threading
import time
from pathlib import Path

from mini_warehouse import mini_texts, mini_warehouse

from ingest.lake import Lake
from ingest.trace.params import TraceParams
from ingest.trace.passlock import lock_path
from ingest.trace.run import TraceJob, trace_generations


def _spans(home: Path) -> int:
    lake = Lake(home)
    return lake.read("spans").num_rows if lake.partitions("spans") else 0


def test_a_second_trace_of_the_pass_waits_and_another_pass_does_not(tmp_path: Path, capfd) -> None:
    home = tmp_path / "wh"
    mini_warehouse(home, seed=0)
    index = str(home / "sandbox" / "mini" / "index")
    gens = [(f"g{i}", t[30:300]) for i, t in enumerate(mini_texts(0)[:3])]
    job = TraceJob((index,), TraceParams())
    other = TraceJob((index,), TraceParams(seed=1))
    assert other.trace_id != job.trace_id

    with open(lock_path(home, job.trace_id), "a") as held:  # another process's trace of this pass
        fcntl.flock(held, fcntl.LOCK_EX)
        trace_generations(Lake(home), other, gens, "other-pass", progress=False)  # does not wait
        written = _spans(home)
        assert written > 0
        worker = threading.Thread(target=trace_generations, args=(Lake(home), job, gens, "file-a"),
                                  kwargs={"progress": False})
        worker.start()
        time.sleep(2.0)
        assert worker.is_alive() and _spans(home) == written  # waiting, nothing written
        fcntl.flock(held, fcntl.LOCK_UN)
    worker.join(timeout=120)
    assert not worker.is_alive()
    assert _spans(home) == 2 * written  # the same texts traced again under the other seed
    assert "waiting for another `lmaudit trace` of tracing pass" in capfd.readouterr().err
