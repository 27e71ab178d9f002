"""The lake writer: atomic, idempotent Parquet partitions.

Each table is a folder of Parquet files, one per partition (`lake/<table>/<partition>.parquet`). A
partition is written to `lake/_tmp/` and renamed into place, so a reader (dbt's `read_parquet` glob)
sees either the whole partition or nothing. Writing a partition that exists replaces it: a re-run of a
step with the same deterministic keys never duplicates rows. A small JSON record per completed partition
(`lake/_manifest/<table>/<partition>.json`) lets steps skip work that is already done.

Every table also holds a zero-row `_schema.parquet`, so that the dbt sources resolve (with their types)
on an empty lake.

A step that writes several partitions that only make sense together (an import: prompts, generations and
the runs row) wraps them in `with lake.transaction():`. Inside it, `write`/`delete` only stage: each
partition is written to `lake/_tmp/txn-<id>/`, so bad rows, a full disk or a crash before the end leave
nothing visible. At the end a journal (`lake/_txn/<id>.json`, written to a temporary name and renamed)
lists the renames; they are applied, then the journal is removed. A crash (kill -9) while they are applied
leaves the journal, and the next lake use (`init`, `write`, `read`, `lmaudit build`) finishes it
(`recover`). So every reader sees all of the step or none of it. Long resumable steps (`lmaudit
generate`) commit per chunk instead and write their runs row last; the staging views hide generations
whose run has no runs row.

`lmaudit build` reads the lake in many queries over minutes; it holds `Lake.snapshot()` (a shared flock on
`<warehouse>/.lake.lock`) meanwhile, and every change to what a reader sees (a partition renamed into place
or removed, a journal applied) takes the same lock exclusively, so an import during a build waits for the
build to finish and the build reads one state of the lake. Staging, the slow part, never waits.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import shutil
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ingest.lake.schemas import TABLES, spec

SCHEMA_FILE = "_schema.parquet"
LOCK_FILE = ".lake.lock"  # in the warehouse folder, beside the lake (not a lake file)
# lake roots whose snapshot this process holds: its own writes go through (a second flock on another open
# file of the same process would wait for itself), and it applies no other writer's journal meanwhile
_SNAPSHOTS: dict[str, int] = {}
_SAFE = re.compile(r"[^A-Za-z0-9_.=+-]")


def partition_name(*parts: object) -> str:
    """A file-system-safe partition name; long or unsafe names get a hash suffix so they stay unique."""
    raw = "--".join(str(p) for p in parts)
    safe = _SAFE.sub("_", raw)
    if safe != raw or len(safe) > 120:
        digest = hashlib.blake2b(raw.encode(), digest_size=6).hexdigest()
        safe = f"{safe[:100]}--{digest}"
    return safe


class Lake:
    """The raw Parquet lake under `<home>/lake`."""

    def __init__(self, home: str | os.PathLike):
        self.home = Path(home).resolve()
        self.root = self.home / "lake"
        self._txn: _Txn | None = None

    # -- layout ---------------------------------------------------------------------------------
    def table_dir(self, table: str) -> Path:
        spec(table)
        return self.root / table

    def partition_path(self, table: str, partition: str) -> Path:
        return self.table_dir(table) / f"{partition}.parquet"

    def _manifest_path(self, table: str, partition: str) -> Path:
        return self.root / "_manifest" / table / f"{partition}.json"

    def init(self) -> None:
        """Create the folders and the zero-row schema file of every table (idempotent); finish any
        transaction a crashed step left half applied."""
        (self.root / "_tmp").mkdir(parents=True, exist_ok=True)
        self.recover()
        self.clean_tmp()
        for name, s in TABLES.items():
            d = self.root / name
            d.mkdir(parents=True, exist_ok=True)
            target = d / SCHEMA_FILE
            if not target.exists() or pq.read_schema(target) != s.schema:
                self._atomic_write(s.schema.empty_table(), target)

    # -- the snapshot lock ------------------------------------------------------------------------
    @contextmanager
    def snapshot(self) -> Iterator[Lake]:
        """Hold the lake still for the block: other processes' writes wait to become visible until it ends
        (`lmaudit build` holds it for the whole dbt run). Nested blocks join the outer one."""
        import fcntl

        key = str(self.root)
        if _SNAPSHOTS.get(key):
            _SNAPSHOTS[key] += 1
            try:
                yield self
            finally:
                _SNAPSHOTS[key] -= 1
            return
        self.home.mkdir(parents=True, exist_ok=True)
        with open(self.home / LOCK_FILE, "a") as fh:
            fcntl.flock(fh, fcntl.LOCK_SH)  # waits only for a commit in progress (a few renames)
            _SNAPSHOTS[key] = 1
            try:
                yield self
            finally:
                _SNAPSHOTS.pop(key, None)
                fcntl.flock(fh, fcntl.LOCK_UN)

    @contextmanager
    def _visible_change(self) -> Iterator[None]:
        """Exclusive use of the lake while a change becomes visible to readers (see `snapshot`)."""
        import fcntl
        import sys

        if _SNAPSHOTS.get(str(self.root)):
            yield
            return
        try:
            fh = open(self.home / LOCK_FILE, "a")  # noqa: SIM115 - closed below
        except OSError:  # a read-only warehouse: the change itself fails with its own message
            yield
            return
        try:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                print(f"waiting for the `lmaudit build` reading {self.root} to finish (the change is staged; "
                      "it becomes visible after the build)", file=sys.stderr, flush=True)
                fcntl.flock(fh, fcntl.LOCK_EX)
            yield
        finally:
            fh.close()  # releases the lock

    # -- writing --------------------------------------------------------------------------------
    def to_table(self, table: str, rows: Iterable[Mapping[str, Any]] | pa.Table) -> pa.Table:
        """Rows as a table of the exact schema; raises ValueError on a missing required value."""
        s = spec(table)
        if isinstance(rows, pa.Table):
            t = rows.select(s.schema.names).cast(s.schema)
        else:
            rows = list(rows)
            t = pa.Table.from_pylist(rows, schema=s.schema)
        for field in s.schema:
            if not field.nullable and t.column(field.name).null_count:
                raise ValueError(f"{table}.{field.name} must not be null")
        keys = t.column(s.key)
        if len(keys) and pc.count_distinct(keys).as_py() != len(keys):
            raise ValueError(f"{table}: duplicate {s.key} values within one partition")
        return t

    def write(self, table: str, partition: str, rows: Iterable[Mapping[str, Any]] | pa.Table,
              meta: Mapping[str, Any] | None = None) -> Path:
        """Write (or replace) one partition atomically and record it in the manifest."""
        self.init()
        t = self.to_table(table, rows)
        target = self.partition_path(table, partition)
        record = {
            "table": table, "partition": partition, "rows": t.num_rows,
            "written_at": datetime.now(timezone.utc).isoformat(), **(meta or {}),
        }
        if self._txn is not None:  # staged; visible when the transaction commits
            staged = self._txn.dir / f"{len(self._txn.ops):05d}.parquet"
            self._atomic_write(t, staged, final=target)
            self._txn.ops.append({"op": "put", "src": str(staged), "table": table, "partition": partition,
                                  "record": record})
            return target
        self._atomic_write(t, target)
        self._write_record(table, partition, record)
        return target

    def record(self, table: str, partition: str) -> dict | None:
        """The manifest record of a written partition (with the `meta` it was written with), or None."""
        try:
            return json.loads(self._manifest_path(table, partition).read_text())
        except (OSError, ValueError):
            return None

    def _write_record(self, table: str, partition: str, record: Mapping[str, Any]) -> None:
        mpath = self._manifest_path(table, partition)
        mpath.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.root / "_tmp" / f"{uuid.uuid4().hex}.json.tmp"
        tmp.write_text(json.dumps(record, sort_keys=True))
        os.replace(tmp, mpath)

    def delete(self, table: str, partition: str) -> None:
        """Remove a partition (the manifest record first, so a crash leaves it 'not done')."""
        if self._txn is not None:
            self._txn.ops.append({"op": "delete", "table": table, "partition": partition})
            return
        with self._visible_change():
            self._manifest_path(table, partition).unlink(missing_ok=True)
            self.partition_path(table, partition).unlink(missing_ok=True)

    # -- transactions -----------------------------------------------------------------------------
    @contextmanager
    def transaction(self) -> Iterator[Lake]:
        """Writes and deletes inside the block become visible together when it ends without an error,
        or not at all (see the module docstring). Nested blocks join the outer one."""
        if self._txn is not None:
            yield self
            return
        self.init()
        txn = _Txn(self.root / "_tmp" / f"txn-{uuid.uuid4().hex}")
        lock = _locked_dir(txn.dir)  # held while the transaction lives: `clean_tmp` removes only dead ones
        try:
            self._txn = txn
            try:
                yield self
            except BaseException:
                self._txn = None
                shutil.rmtree(txn.dir, ignore_errors=True)
                raise
            self._txn = None
            self._commit(txn)
        finally:
            os.close(lock)

    def _commit(self, txn: _Txn) -> None:
        if not txn.ops:
            shutil.rmtree(txn.dir, ignore_errors=True)
            return
        journal = self.root / "_txn" / f"{txn.dir.name}.json"
        journal.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.root / "_tmp" / f"{txn.dir.name}.json.tmp"
        try:
            tmp.write_text(json.dumps({"dir": str(txn.dir), "ops": txn.ops}, sort_keys=True))
            os.replace(tmp, journal)  # the commit point
        except OSError as e:
            tmp.unlink(missing_ok=True)
            shutil.rmtree(txn.dir, ignore_errors=True)
            raise _write_error(journal, e) from None
        self._apply(journal)

    def _apply(self, journal: Path) -> None:
        """Apply a committed journal's operations (idempotent: a rename already done is skipped)."""
        with self._visible_change():
            self._apply_ops(journal)

    def _apply_ops(self, journal: Path) -> None:
        try:
            j = json.loads(journal.read_text())
        except FileNotFoundError:
            return  # another process finished it
        for op in j["ops"]:
            table, partition = op["table"], op["partition"]
            if op["op"] == "delete":
                self._manifest_path(table, partition).unlink(missing_ok=True)
                self.partition_path(table, partition).unlink(missing_ok=True)
                continue
            target = self.partition_path(table, partition)
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(op["src"], target)
            except FileNotFoundError:
                if not target.exists():  # staged file gone before its rename: nothing to apply
                    continue
            self._write_record(table, partition, op["record"])
        journal.unlink(missing_ok=True)
        if j.get("dir"):
            shutil.rmtree(j["dir"], ignore_errors=True)

    def recover(self) -> int:
        """Finish the transactions a crashed step committed but did not apply (a live one's is its own to apply:
        `_owner_alive`); returns how many."""
        d = self.root / "_txn"
        if not d.is_dir() or _SNAPSHOTS.get(str(self.root)):
            return 0  # (under this process's snapshot: the writer applies it once the snapshot ends)
        journals = [j for j in sorted(d.glob("*.json")) if not _owner_alive(j)]
        for j in journals:
            self._apply(j)
        return len(journals)

    def _atomic_write(self, t: pa.Table, target: Path, final: Path | None = None) -> None:
        """Write `t` to a temporary file and rename it to `target` (`final`: where a staged file goes)."""
        from ingest.names import inside

        inside(self.root, target)
        inside(self.root, final or target)
        tmp_dir = self.root / "_tmp"
        tmp_dir.mkdir(parents=True, exist_ok=True)
        tmp = tmp_dir / f"{target.parent.name}.{uuid.uuid4().hex}.parquet.tmp"
        try:
            pq.write_table(t, tmp, compression="zstd")
            target.parent.mkdir(parents=True, exist_ok=True)
            if final is None and target.parent.parent == self.root and not target.parent.name.startswith("_"):
                with self._visible_change():  # a table's partition: readers see it from here on
                    os.replace(tmp, target)
            else:
                os.replace(tmp, target)
        except OSError as e:
            raise _write_error(final or target, e) from None
        finally:
            tmp.unlink(missing_ok=True)

    def clean_tmp(self, older_than_s: float = 3600.0) -> int:
        """Remove what crashed writers left in `_tmp`; returns how many were removed. The staging folder of a
        transaction whose process is gone goes at once (a live one holds a lock on it; `lake.init()` runs
        this, so the next write cleans up after a kill); a loose temporary file once it is `older_than_s`
        old (it cannot tell a live writer's file from a dead one's)."""
        import fcntl

        n = 0
        now = time.time()
        tmp = self.root / "_tmp"
        for p in tmp.glob("*.tmp"):
            try:
                if now - p.stat().st_mtime > older_than_s:
                    p.unlink(missing_ok=True)
                    n += 1
            except FileNotFoundError:
                continue
        for p in [*tmp.glob("txn-*"), *tmp.glob(".new-txn-*")]:  # staging of a transaction that never committed
            if not p.is_dir() or (self.root / "_txn" / f"{p.name}.json").exists():
                continue
            try:
                fd = os.open(p, os.O_RDONLY)
            except OSError:
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # a live transaction
            finally:
                os.close(fd)
            if p.name.startswith(".new-") and now - p.stat().st_mtime < 60:
                continue  # being created (its lock comes right after mkdir)
            shutil.rmtree(p, ignore_errors=True)
            n += 1
        return n

    # -- reading --------------------------------------------------------------------------------
    def is_done(self, table: str, partition: str) -> bool:
        return self._manifest_path(table, partition).exists() and self.partition_path(table, partition).exists()

    def partitions(self, table: str) -> list[str]:
        d = self.table_dir(table)
        return sorted(p.stem for p in d.glob("*.parquet") if p.name != SCHEMA_FILE) if d.exists() else []

    def glob(self, table: str) -> str:
        """The `read_parquet` glob of a table (the schema file included: it has zero rows)."""
        return str(self.table_dir(table) / "*.parquet")

    @staticmethod
    def _read_partition(path: Path, s) -> pa.Table:
        try:
            return pq.read_table(path).select(s.schema.names).cast(s.schema)
        except (pa.ArrowInvalid, OSError) as e:
            from ingest.errors import UserError

            raise UserError(f"lake partition {path} is unreadable ({str(e).splitlines()[0]}); move it away and "
                            "re-run the step that wrote it (or restore it from a backup)") from None

    def read(self, table: str, partition: str | None = None) -> pa.Table:
        """Read a table (or one partition) as Arrow, in the declared schema."""
        s = spec(table)
        if (self.root / "_txn").is_dir():
            self.recover()
        paths = [self.partition_path(table, partition)] if partition else [
            self.partition_path(table, p) for p in self.partitions(table)]
        parts = [self._read_partition(p, s) for p in paths if p.exists()]
        return pa.concat_tables(parts) if parts else s.schema.empty_table()


def _owner_alive(journal: Path) -> bool:
    """Whether the transaction that wrote `journal` is still live: it holds the lock on its staging folder until
    its journal is applied, so it applies it itself (after a running build, when one holds the snapshot). Another
    lake use must not queue for it: a read or a second import's staging would wait for the whole build."""
    import fcntl

    try:
        folder = json.loads(journal.read_text()).get("dir")
        fd = os.open(folder, os.O_RDONLY) if folder else None
    except (OSError, ValueError):
        return False
    if fd is None:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def _locked_dir(folder: Path) -> int:
    """Create `folder` holding an exclusive flock on it (returned: the descriptor to close). It is made under
    a hidden name, locked, then renamed, so no cleaner ever sees it unlocked under its real name."""
    import fcntl

    new = folder.parent / f".new-{folder.name}"
    new.mkdir(parents=True)
    fd = os.open(new, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.rename(new, folder)
    except BaseException:
        os.close(fd)
        shutil.rmtree(new, ignore_errors=True)
        raise
    return fd


class _Txn:
    """The staging folder and the operations of one open transaction."""

    def __init__(self, folder: Path):
        self.dir = folder
        self.ops: list[dict[str, Any]] = []


def _write_error(target: Path, e: OSError) -> Exception:
    """A full disk or a read-only warehouse is the user's to fix (one line); anything else stays an error."""
    if e.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM):
        from ingest.errors import UserError

        return UserError(f"cannot write {target} ({os.strerror(e.errno)}); free space or fix the permissions "
                         "of the warehouse, then re-run the same command (nothing partial was kept)")
    return e
