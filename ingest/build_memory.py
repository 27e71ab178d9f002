"""How much memory `lmaudit build` may use, and where DuckDB spills what does not fit.

Without a limit DuckDB's buffer manager takes up to 80 % of the machine's RAM, and the build's peak memory grew
with the lake (1.2 GB at a quarter of paper scale, 12.8 GB at four times: BENCHMARKS.md "How cost grows").
A build now has a budget: `$LMAUDIT_MEMORY_LIMIT` (`6GB`, `6GiB`, `6000MB`, or `40%` of the machine), else half
of the machine's memory (the smaller of MemTotal and the container's cgroup limit), since a warehouse machine
is usually shared with tracing, the explorer or other users. DuckDB's `memory_limit` is a share of that budget
(`DUCKDB_SHARE`): the rest is for what DuckDB does not count, the Python models' Arrow tables (which read one
run at a time, `ingest/marts/incremental.py`), dbt and the interpreter. What DuckDB cannot keep in its share
goes to a spill folder inside the warehouse (`<warehouse>/dbt/spill`), removed when dbt ends.

Both settings are given when dbt-duckdb opens the database (`config_options` in profiles.yml), not per cursor:
DuckDB refuses `SET temp_directory` once the folder has been used, even to the same value (docs/footguns.md).
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from ingest.errors import UserError

ENV_MEMORY = "LMAUDIT_MEMORY_LIMIT"
# what profiles.yml reads (set by `ingest.build.run_dbt` for each dbt invocation)
ENV_DUCKDB_LIMIT = "LMAUDIT_DUCKDB_MEMORY_LIMIT"
ENV_DUCKDB_SPILL = "LMAUDIT_DUCKDB_TEMP_DIRECTORY"
# what the per-run Python models read (ingest/marts/incremental.py): bytes one batch of their input may take
ENV_PYTHON_BATCH = "LMAUDIT_PYTHON_BATCH_BYTES"

DEFAULT_SHARE = 0.5  # of the machine's memory, when $LMAUDIT_MEMORY_LIMIT is not set
DUCKDB_SHARE = 0.6  # of the build's budget, for DuckDB's buffer manager
# of what the budget leaves outside DuckDB, for one batch of a per-run Python model: dbt's two threads may
# run two of them at once, beside dbt and the interpreter
PYTHON_BATCH_SHARE = 0.5
MIN_BUDGET = 512 << 20  # below this DuckDB cannot hold one row group of the big tables per thread

_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "m": 1000**2, "mb": 1000**2, "g": 1000**3, "gb": 1000**3,
          "t": 1000**4, "tb": 1000**4, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40}
_SIZE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([a-z]*)\s*$", re.IGNORECASE)
_SHARE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*%\s*$")


@dataclass(frozen=True)
class BuildMemory:
    """A build's memory budget in bytes and where it came from (for messages and the benchmarks' logs)."""

    budget: int
    source: str

    @property
    def duckdb_limit(self) -> int:
        return int(self.budget * DUCKDB_SHARE)

    @property
    def python_batch_bytes(self) -> int:
        """What one batch of a per-run Python model may hold (its Arrow input and the arrays made from it)."""
        return int((self.budget - self.duckdb_limit) * PYTHON_BATCH_SHARE)

    def duckdb_setting(self) -> str:
        """`memory_limit` as DuckDB reads it (whole MiB)."""
        return f"{max(1, self.duckdb_limit >> 20)}MiB"


def _read_int(path: str) -> int | None:
    try:
        text = Path(path).read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None  # cgroup v2 writes "max" when unlimited


def machine_memory() -> tuple[int, str]:
    """The memory this process may use: the smaller of MemTotal and a cgroup (v2 or v1) limit."""
    total, source = None, "MemTotal"
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                total = int(line.split()[1]) * 1024
                break
    except OSError:
        pass
    if total is None:  # not Linux: ask the OS for physical pages
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        limit = _read_int(path)
        if limit is not None and 0 < limit < total:
            total, source = limit, f"cgroup limit {path}"
    return total, source


def parse_size(text: str, machine: int) -> int:
    """Bytes from `6GB` / `6 GiB` / `6000MB` / `6g` (decimal units unless `i`), or `40%` of `machine`."""
    share = _SHARE.match(text)
    if share:
        pct = float(share.group(1))
        if not 0 < pct <= 100:
            raise ValueError("a share must be above 0% and at most 100%")
        return int(machine * pct / 100)
    m = _SIZE.match(text)
    if not m or m.group(2).lower() not in _UNITS:
        raise ValueError("not a size")
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


def build_memory(environ: dict[str, str] | None = None) -> BuildMemory:
    """The build's budget: `$LMAUDIT_MEMORY_LIMIT`, else DEFAULT_SHARE of the machine; a bad value is a
    `UserError` naming the variable and a valid example."""
    env = os.environ if environ is None else environ
    machine, what = machine_memory()
    raw = env.get(ENV_MEMORY, "").strip()
    if not raw:
        return BuildMemory(max(MIN_BUDGET, int(machine * DEFAULT_SHARE)),
                           f"{DEFAULT_SHARE:.0%} of {machine / 2**30:.1f} GiB ({what})")
    try:
        budget = parse_size(raw, machine)
    except ValueError as e:
        raise UserError(f"${ENV_MEMORY}={raw!r} is not a memory size ({e}); give e.g. 6GB, 6GiB, 6000MB or 40% "
                        "(of the machine's memory), or unset it for half of the machine") from None
    if budget < MIN_BUDGET:
        raise UserError(f"${ENV_MEMORY}={raw!r} is below the {MIN_BUDGET >> 20} MiB a build needs; give at least "
                        "512MiB (e.g. 2GB), or unset it for half of the machine")
    return BuildMemory(budget, f"${ENV_MEMORY}={raw}")


def spill_dir(home: Path) -> Path:
    """Where DuckDB spills during a build of `home`: inside the warehouse (same disk as the database)."""
    return Path(home) / "dbt" / "spill"


def remove_spill(home: Path) -> None:
    """Remove the spill folder (DuckDB deletes its files when the database closes; a killed build leaves them)."""
    shutil.rmtree(spill_dir(home), ignore_errors=True)


def python_batch_bytes(environ: dict[str, str] | None = None) -> int:
    """The batch size a Python model was given (`$LMAUDIT_PYTHON_BATCH_BYTES`, set by `lmaudit build`), else
    the same figure from the budget (a plain `dbt build`)."""
    env = os.environ if environ is None else environ
    raw = env.get(ENV_PYTHON_BATCH, "").strip()
    return int(raw) if raw.isdigit() else build_memory(env).python_batch_bytes


def duckdb_config(home: Path, memory: BuildMemory) -> dict[str, str]:
    """The settings every DuckDB connection of a build opens the database with."""
    return {"memory_limit": memory.duckdb_setting(), "temp_directory": str(spill_dir(home))}
