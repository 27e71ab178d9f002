"""`lmaudit export`: marts as Parquet/CSV for BI tools, and a read-only published copy of the database.

BI tools must never open the file dbt writes (DuckDB refuses every other process while dbt holds it, and a
reader would block the next build). Exports are written from a read-only connection to temporary files
and renamed into `exports/`, so a dashboard never sees a half-written file.
"""

from __future__ import annotations

import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path

from ingest.errors import UserError
from ingest.home import db_path
from ingest.names import output_dir

PUBLISHED = "lmaudit-published.duckdb"


@dataclass(frozen=True)
class ExportResult:
    files: list[Path]
    published: Path | None


def connect_marts(home: Path):
    """A read-only connection to the built warehouse (ingest/report/build.py imports this name)."""
    from ingest.warehouse_db import connect_read_only

    return connect_read_only(home)


def list_marts(con) -> list[str]:
    rows = con.execute(
        "select table_name from information_schema.tables where table_schema = 'main' "
        "and (table_name like 'fct\\_%' escape '\\' or table_name like 'dim\\_%' escape '\\') order by 1").fetchall()
    return [r[0] for r in rows]


def export(home: Path, fmt: str = "parquet", models: list[str] | None = None, out: Path | None = None,
           publish: bool = True) -> ExportResult:
    if fmt not in ("parquet", "csv"):
        raise UserError(f"--format must be parquet or csv, not {fmt!r}")
    from ingest.warehouse_db import require_database

    require_database(home)  # before the exports folder is made: a mistyped warehouse folder stays uncreated
    out = (out or home / "exports").resolve()
    output_dir(out)
    con = connect_marts(home)
    try:
        available = list_marts(con)
        wanted = models or available
        missing = [m for m in wanted if m not in available and not _exists(con, m)]
        if missing:
            raise UserError(f"unknown model(s) {', '.join(missing)}; available marts: {', '.join(available) or 'none'}")
        files = []
        for m in wanted:
            target = out / f"{m}.{fmt}"
            tmp = out / f".{m}.{uuid.uuid4().hex}.{fmt}.tmp"
            opts = "(format parquet, compression zstd)" if fmt == "parquet" else "(format csv, header true)"
            con.execute(f"copy (select * from {_ident(m)}) to {sql_string(tmp)} {opts}")
            os.replace(tmp, target)
            files.append(target)
        published = None
        if publish:
            published = out / PUBLISHED
            tmp = out / f".{PUBLISHED}.{uuid.uuid4().hex}.tmp"
            # our read-only connection holds a shared lock: no build can start while we copy
            shutil.copyfile(db_path(home), tmp)
            os.replace(tmp, published)
            os.chmod(published, 0o444)
    finally:
        con.close()
    return ExportResult(files, published)


def sql_string(path: Path | str) -> str:
    """A path as a SQL string literal (a quote in a folder name ended the literal early)."""
    return "'" + str(path).replace("'", "''") + "'"


def _exists(con, name: str) -> bool:
    return bool(con.execute("select count(*) from information_schema.tables where table_name = ?", [name]).fetchone()[0])


def _ident(name: str) -> str:
    if not name.replace("_", "").isalnum():
        raise UserError(f"invalid model name {name!r}")
    return f'"{name}"'
