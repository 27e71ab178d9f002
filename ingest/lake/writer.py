"""The lake writer: atomic, idempotent Parquet partitions.

Each table is a folder of Parquet files, one per partition (`lake/<table>/<partition>.parquet`). A
partition is written to `lake/_tmp/` and renamed into place, so a reader (dbt's `read_parquet` glob)
sees either the whole partition or nothing. Writing a partition that exists replaces it: a re-run of a
step with the same deterministic keys never duplicates rows. A small JSON record per completed partition
(`lake/_manifest/<table>/<partition>.json`) lets steps skip work that is already done.

Every table also holds a zero-row `_schema.parquet`, so that the dbt sources resolve (with their types)
on an empty lake.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import time
import uuid
from collections.abc import Iterable, Mapping
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

    # -- layout ---------------------------------------------------------------------------------
    def table_dir(self, table: str) -> Path:
        spec(table)
        return self.root / table

    def partition_path(self, table: str, partition: str) -> Path:
        return self.table_dir(table) / f"{partition}.parquet"

    def _manifest_path(self, table: str, partition: str) -> Path:
        return self.root / "_manifest" / table / f"{partition}.json"

    def init(self) -> None:
        """Create the folders and the zero-row schema file of every table (idempotent)."""
        (self.root / "_tmp").mkdir(parents=True, exist_ok=True)
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
        self._atomic_write(t, target)
        record = {
            "table": table, "partition": partition, "rows": t.num_rows,
            "written_at": datetime.now(timezone.utc).isoformat(), **(meta or {}),
        }
        mpath = self._manifest_path(table, partition)
        mpath.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.root / "_tmp" / f"{uuid.uuid4().hex}.json.tmp"
        tmp.write_text(json.dumps(record, sort_keys=True))
        os.replace(tmp, mpath)
        return target

    def delete(self, table: str, partition: str) -> None:
        """Remove a partition (the manifest record first, so a crash leaves it 'not done')."""
        self._manifest_path(table, partition).unlink(missing_ok=True)
        self.partition_path(table, partition).unlink(missing_ok=True)

    def _atomic_write(self, t: pa.Table, target: Path) -> None:
        tmp_dir = self.root / "_tmp"
        tmp_dir.mkdir(parents=True, exist_ok=True)
        tmp = tmp_dir / f"{target.parent.name}.{uuid.uuid4().hex}.parquet.tmp"
        try:
            pq.write_table(t, tmp, compression="zstd")
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(tmp, target)
        except OSError as e:
            if e.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM):
                from ingest.errors import UserError

                raise UserError(f"cannot write {target} ({os.strerror(e.errno)}); free space or fix the permissions "
                                "of the warehouse, then re-run the same command (nothing partial was kept)") from None
            raise
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
        paths = [self.partition_path(table, partition)] if partition else [
            self.partition_path(table, p) for p in self.partitions(table)]
        parts = [self._read_partition(p, s) for p in paths if p.exists()]
        return pa.concat_tables(parts) if parts else s.schema.empty_table()
