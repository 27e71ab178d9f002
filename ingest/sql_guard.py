"""A DuckDB connection for user queries that can read the warehouse and nothing else.

`lmaudit sql` runs whatever the user typed. A read-only connection still lets SQL read any file on disk
(`read_csv('/etc/passwd')`) and write any file (`COPY ... TO`, over lake partitions included). Here:
- only statements that return rows run (SELECT, incl. WITH / FROM / SUMMARIZE / DESCRIBE / SHOW, and
  EXPLAIN); COPY, EXPORT, ATTACH, INSTALL/LOAD, SET, CREATE ... are refused with the reason;
- file access is switched off except for the lake folder, which the staging views read, and the exports
  (`allowed_directories` + `enable_external_access = false`), and the configuration is locked so a
  query cannot switch it back on.
Writing files is `lmaudit export`'s job.
"""

from __future__ import annotations

from pathlib import Path

from ingest.errors import UserError

ALLOWED = {"SELECT", "EXPLAIN"}


def open_read_only(db: Path, home: Path):
    """`db` is `<home>/lmaudit.duckdb`; its staging views are re-pointed at `<home>/lake` when the warehouse was
    moved or copied (ingest/warehouse_db.py) before file access is locked down."""
    from ingest.warehouse_db import connect_read_only

    if Path(db).resolve() != (Path(home) / "lmaudit.duckdb").resolve():
        raise ValueError(f"{db} is not the database of the warehouse {home}")
    con = connect_read_only(home)
    lake = str((home / "lake").resolve()) + "/"
    exports = str((home / "exports").resolve()) + "/"
    con.execute("set allowed_directories = [?, ?]", [lake, exports])  # a list parameter would be one string
    con.execute("set enable_external_access = false")
    con.execute("set lock_configuration = true")
    return _Guarded(con)


class _Guarded:
    """Checks every statement's type before it runs; otherwise a DuckDB connection."""

    def __init__(self, con):
        self._con = con

    def execute(self, query: str, *args):
        import duckdb

        try:
            statements = self._con.extract_statements(query)
        except duckdb.Error as e:
            raise UserError(f"query failed: {str(e).splitlines()[0]}") from None
        for st in statements:
            kind = str(st.type).rsplit(".", 1)[-1]
            if kind not in ALLOWED:
                raise UserError(f"lmaudit sql runs read-only queries (SELECT, WITH, EXPLAIN), not {kind}; to write "
                                "tables to files use `lmaudit export`")
        return self._con.execute(query, *args)

    def close(self) -> None:
        self._con.close()
