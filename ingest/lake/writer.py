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
        for name, s in TABLES.items():
            d = self.root / name
            d.mkdir(parents=True, exist_ok=True)
            target = d / SCHEMA_FILE
            if not target.exists() or pq.read_schema(target) != s.schema:
                self._atomic_write(s.schema.empty_table(), target)

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
        txn.dir.mkdir(parents=True)
        self._txn = txn
        try:
            yield self
        except BaseException:
            self._txn = None
            shutil.rmtree(txn.dir, ignore_errors=True)
            raise
        self._txn = None
        self._commit(txn)

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
        """Finish the transactions a crashed step committed but did not apply; returns how many."""
        d = self.root / "_txn"
        if not d.is_dir():
            return 0
        journals = sorted(d.glob("*.json"))
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
            os.replace(tmp, target)
        except OSError as e:
            raise _write_error(final or target, e) from None
        finally:
            tmp.unlink(missing_ok=True)

    def clean_tmp(self, older_than_s: float = 3600.0) -> int:
        """Remove temporary files left by crashed writers; returns how many were removed."""
        n = 0
        now = time.time()
        for p in (self.root / "_tmp").glob("*.tmp"):
            if now - p.stat().st_mtime > older_than_s:
                p.unlink(missing_ok=True)
                n += 1
        for p in (self.root / "_tmp").glob("txn-*"):  # staging of a transaction that never committed
            if p.is_dir() and now - p.stat().st_mtime > older_than_s and not (self.root / "_txn" / f"{p.name}.json").exists():
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
