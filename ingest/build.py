"""`lmaudit build`: run `dbt build` in-process on the warehouse, with progress and a one-line summary.

dbt runs through its Python runner (`dbtRunner`), so the same interpreter, the same installed dbt and the
same environment serve the CLI, the tests and a cron job. dbt's target and log folders go into the
warehouse folder, never into the repository, so two warehouses can be built side by side.
"""

from __future__ import annotations

import errno
import os
import re
import time
from collections import Counter
from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ingest.build_memory import (ENV_DUCKDB_LIMIT, ENV_DUCKDB_SPILL, ENV_PYTHON_BATCH, BuildMemory, build_memory,
                                  duckdb_config, remove_spill)
from ingest.errors import UserError
from ingest.home import ENV_HOME, project_dir
from ingest.lake import Lake


@dataclass
class BuildResult:
    success: bool
    counts: Counter = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def summary(self) -> str:
        parts = [f"{n} {k}" for k, n in sorted(self.counts.items())]
        state = "ok" if self.success else "FAILED"
        return f"dbt build {state}: {', '.join(parts) or 'nothing to do'} in {self.seconds:.1f}s"


@contextmanager
def _dbt_environment(home: Path, memory: BuildMemory):
    saved = {k: os.environ.get(k) for k in (ENV_HOME, "DBT_TARGET_PATH", "DBT_LOG_PATH", "DBT_SEND_ANONYMOUS_USAGE_STATS",
                                            "DBT_INDIRECT_SELECTION", ENV_DUCKDB_LIMIT, ENV_DUCKDB_SPILL,
                                            ENV_PYTHON_BATCH)}
    # resolved, as ingest.home.model_key drops it (macros/model_key.sql reads this; a symlink disagreed)
    os.environ[ENV_HOME] = str(Path(home).resolve())
    # profiles.yml opens the database with these (`config_options`): DuckDB's share of the build's memory and
    # a spill folder inside the warehouse (ingest/build_memory.py)
    config = duckdb_config(home, memory)
    os.environ[ENV_DUCKDB_LIMIT] = config["memory_limit"]
    os.environ[ENV_DUCKDB_SPILL] = config["temp_directory"]
    os.environ[ENV_PYTHON_BATCH] = str(memory.python_batch_bytes)  # the per-run Python models' batches
    os.environ["DBT_TARGET_PATH"] = str(home / "dbt" / "target")
    os.environ["DBT_LOG_PATH"] = str(home / "dbt" / "logs")
    os.environ["DBT_SEND_ANONYMOUS_USAGE_STATS"] = "false"
    # with --select, only run tests whose parents are all selected (a partial build must not fail on
    # a relationship test that reaches a model outside the selection)
    os.environ.setdefault("DBT_INDIRECT_SELECTION", "cautious")
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def check_warehouse_path(home: Path) -> None:
    """Refuse a warehouse folder DuckDB cannot open: it reads a backslash as a folder separator (`a\\b` opens
    `a/b`), so the database would be looked for in another folder. (A quote or braces in the path work: the
    lake source escapes them.)"""
    if "\\" in str(Path(home).resolve()):
        raise UserError(f"the warehouse folder {home} has a backslash in its path, which DuckDB reads as a folder "
                        "separator; move the warehouse (or point -w / $LMAUDIT_HOME) to a path without one")


def run_dbt(home: Path, args: Sequence[str], on_event=None, memory: BuildMemory | None = None):
    """Invoke dbt with the project's own profile; returns dbt's result object. DuckDB gets `memory`'s share
    (default: `build_memory()`, from $LMAUDIT_MEMORY_LIMIT or the machine) and spills into the warehouse; the
    spill folder is removed afterwards."""
    from dbt.cli.main import dbtRunner

    check_warehouse_path(home)
    memory = memory or build_memory()
    proj = project_dir()
    home.mkdir(parents=True, exist_ok=True)
    Lake(home).init()
    with _dbt_environment(home, memory):
        import logging

        runner = dbtRunner(callbacks=[on_event] if on_event else [])
        # the file log on a full disk: Python's logging would print a traceback per failed write to stderr
        # ("--- Logging error ---"); the build's own one-line error already says what happened
        saved_raise, logging.raiseExceptions = logging.raiseExceptions, False
        try:
            # dbt's console log is off (a full disk or a broken source printed a traceback per model before
            # our one line; failures reach us through on_event); `--log-level-file` keeps dbt.log, which
            # `--log-level` alone would silence too
            return runner.invoke([*args, "--project-dir", str(proj), "--profiles-dir", str(proj), "--quiet",
                                  "--log-level", "none", "--log-level-file", "info"])
        finally:
            logging.raiseExceptions = saved_raise
            _release_duckdb()
            remove_spill(home)


def _release_duckdb() -> None:
    """dbt-duckdb keeps its database open for the life of the process; close it so that this process
    (tests, `lmaudit demo`) can open the file read-only afterwards."""
    try:
        from dbt.adapters.duckdb.connections import DuckDBConnectionManager

        DuckDBConnectionManager.close_all_connections()
    except Exception:  # noqa: BLE001 - nothing was open
        pass


@contextmanager
def build_lock(home: Path):
    """One build per warehouse at a time. A second dbt on the same DuckDB file fails on its lock after
    printing a traceback per model; here it stops at once with one line. The lock is an advisory flock
    on <warehouse>/.build.lock, released when the build (or its process) ends."""
    import fcntl

    home.mkdir(parents=True, exist_ok=True)
    with open(home / ".build.lock", "a") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UserError(f"another `lmaudit build` is running on {home}; wait for it to finish (or use "
                            "`flock` in cron to skip overlapping runs)") from None
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def check_lake(home: Path) -> int:
    """Read the footer of every lake partition before dbt does, so that a truncated or foreign file is named
    with its fix, instead of a failed staging model and every model after it. Returns the partitions read."""
    import pyarrow.parquet as pq

    from ingest.lake import TABLES

    lake = Lake(home)
    n = 0
    for table in TABLES:
        d = lake.table_dir(table)
        if not d.exists():
            continue
        for path in sorted(d.glob("*.parquet")):
            try:
                pq.read_metadata(path)
            except Exception as e:  # noqa: BLE001 - any unreadable file is the user's to remove
                raise UserError(f"lake partition {path} is unreadable ({str(e).splitlines()[0]}); move it away and "
                                "re-run the step that wrote it (or restore it from a backup), then build again") from None
            n += 1
    return n


# Left out of a plain `lmaudit build` (run by `lmaudit build --full-tests` and by the test suite in CI):
# dbt's unit tests check the models' SQL on fixed inputs, so their answer changes with the code, never with the
# warehouse's data; tests tagged `full_scan` re-prove, over every row of the largest staging table, a key
# property the lake writer already guarantees where it writes (docs/warehouse.md, "What a build tests").
CI_ONLY = ("test_type:unit", "tag:full_scan")


def build(home: Path, select: Sequence[str] = (), exclude: Sequence[str] = (), full_refresh: bool = False,
          vars_: str | None = None, progress: bool = True, full_tests: bool = False) -> BuildResult:
    """`dbt build` over the warehouse: models and data tests (and seeds where present); `full_tests` adds
    the unit tests and the full-scan key tests (`CI_ONLY`).

    The build reads one state of the lake: it holds the lake's snapshot lock (`Lake.snapshot`) from the
    partition check to dbt's end, so an import that commits meanwhile waits for it (before, a run's
    generations could be read before its import and its runs row after, and data tests failed)."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from ingest.build_vars import check_vars

    check_vars(vars_)  # before anything runs: a bad value failed only when its model ran, an unknown name never
    memory = build_memory()  # a bad $LMAUDIT_MEMORY_LIMIT: one line, before anything runs
    check_warehouse_path(home)
    args = ["build"]
    if select:
        # a selector that matches nothing is a typo, not "nothing to do": dbt stops before running anything
        args += ["--select", *select, "--warn-error-options", '{"error": ["NoNodesForSelectionCriteria"]}']
    exclude = [*exclude, *(() if full_tests else CI_ONLY)]
    if exclude:
        args += ["--exclude", *exclude]
    if full_refresh:
        args.append("--full-refresh")
    if vars_:
        args += ["--vars", vars_]

    result = BuildResult(success=False)
    console = Console(stderr=True)
    bar = Progress(TextColumn("[bold]dbt build"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.description}"),
                   TimeElapsedColumn(), console=console, disable=not progress or not console.is_terminal,
                   transient=True)
    task = bar.add_task("starting", total=None)

    def on_event(event) -> None:
        name = event.info.name
        if name == "ConcurrencyLine":
            bar.update(task, total=event.data.node_count)
        elif name == "NodeFinished":
            rr = event.data.run_result
            status = str(rr.status).lower()
            result.counts[_bucket(status)] += 1
            node = event.data.node_info.node_name
            if _bucket(status) in ("error", "fail"):
                lines = [x.strip() for x in (rr.message or status).splitlines() if x.strip()] or [status]
                # dbt's first line names the node ("Runtime Error in model m (path)"), its last the cause
                msg = lines[0] if len(lines) == 1 else f"{lines[0]}: {lines[-1]}"
                if "incremental model are out of sync" in (rr.message or ""):
                    msg = ("its columns changed since the last build (an incremental model); rebuild it with "
                           "`lmaudit build --full-refresh`")
                result.failures.append(f"{node}: {msg}")
            bar.update(task, advance=1, description=node)

    start = time.perf_counter()
    lake = Lake(home)
    with build_lock(home):
        lake.init()  # a crashed writer's journal is applied before the snapshot is taken
        with lake.snapshot(), bar:
            check_lake(home)
            try:
                res = run_dbt(home, args, on_event, memory)
            finally:
                drop_leftover_tmp_tables(home, memory)
    result.seconds = time.perf_counter() - start
    if res.exception is not None:
        exc = res.exception
        unmatched = _NO_MATCH.search(str(exc))
        if unmatched:
            raise UserError(f"--select {unmatched.group(1)} matches no model, test or seed of the dbt project; check "
                            "the name (the models are the .sql files under models/, e.g. fct_propensity, +fct_setting_metrics, "
                            "staging)")
        full = isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT)
        fix = "free space on the warehouse's disk and re-run `lmaudit build`" if full else \
            f"see {home / 'dbt' / 'logs'}"
        raise UserError(f"dbt could not run: {str(exc).splitlines()[0]}; {fix}")
    result.success = bool(res.success)
    return result


# dbt-duckdb's temporary relation of an incremental model: `<model>__dbt_tmp<timestamp>`
_DBT_TMP = r"__dbt_tmp[0-9]*$"


def drop_leftover_tmp_tables(home: Path, memory: BuildMemory | None = None) -> list[str]:
    """Drop the `<model>__dbt_tmp*` tables dbt-duckdb leaves in the database. An incremental *Python* model
    (the PropMe bootstraps) writes its new rows to a "temporary" relation, but dbt-duckdb's Python writer
    creates it as a plain table (`py_write_table` ignores `temporary`) and the materialization drops only
    relations it did not think temporary: four tables per build stayed, without limit. Best effort (a
    database another process holds is left for the next build); returns the names dropped."""
    import duckdb

    from ingest.home import db_path

    path = db_path(home)
    if not path.exists():
        return []
    try:  # with the build's memory limit and spill folder, as every connection of a build
        con = duckdb.connect(str(path), config=duckdb_config(home, memory or build_memory()))
    except duckdb.Error:
        return []
    try:
        names = [r[0] for r in con.execute(
            "select table_name from duckdb_tables() where database_name = current_database() and "
            "schema_name = 'main' and not temporary and regexp_matches(table_name, ?)", [_DBT_TMP]).fetchall()]
        for name in names:
            con.execute(f'drop table if exists main."{name.replace(chr(34), chr(34) * 2)}"')
        return names
    except duckdb.Error:
        return []
    finally:
        con.close()
        remove_spill(home)


# dbt's message when --warn-error-options turns NoNodesForSelectionCriteria into an error
_NO_MATCH = re.compile(r"selection criterion '(.+?)' does not match any enabled nodes")


def _bucket(status: str) -> str:
    status = status.split(".")[-1]
    return {"success": "ok", "pass": "ok", "warn": "warn", "error": "error", "fail": "fail",
            "skipped": "skipped"}.get(status, status)
