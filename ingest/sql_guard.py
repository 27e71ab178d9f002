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


def guard_in_memory(con):
    """An in-memory connection (tables the caller loaded first) with file access switched off and locked and
    every statement checked as `lmaudit sql` checks it: for user SQL over data that is not in the warehouse
    (`lmaudit audit documents --where` over a corpus's document metadata)."""
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
            self._check(st)
        return self._con.execute(query, *args)

    def _check(self, st) -> None:
        """A statement may run when it returns rows; EXPLAIN only when what it explains does (EXPLAIN ANALYZE
        executes its statement: `EXPLAIN ANALYZE COPY ... TO` would write into the lake)."""
        kind = str(st.type).rsplit(".", 1)[-1]
        if kind not in ALLOWED:
            raise UserError(f"lmaudit sql runs read-only queries (SELECT, WITH, EXPLAIN), not {kind}; to write "
                            "tables to files use `lmaudit export`")
        if kind == "EXPLAIN":
            import duckdb

            inner = explained_statement(st.query)
            try:
                statements = self._con.extract_statements(inner)
            except duckdb.Error as e:
                raise UserError(f"query failed: {str(e).splitlines()[0]}") from None
            if not statements:
                raise UserError("EXPLAIN needs a statement to explain")
            for sub in statements:
                self._check(sub)

    def close(self) -> None:
        self._con.close()


def explained_statement(sql: str) -> str:
    """The statement an EXPLAIN statement explains: the text after EXPLAIN, its ANALYZE / ANALYSE keyword and
    its parenthesised options, comments skipped (DuckDB's own tokenizer, so quotes and comments are read as
    DuckDB reads them)."""
    import duckdb

    tokens = duckdb.tokenize(sql)
    words = [(pos, sql[pos:nxt].strip()) for (pos, kind), (nxt, _) in zip(tokens, [*tokens[1:], (len(sql), None)])
             if kind != duckdb.token_type.comment]
    i = 1  # words[0] is EXPLAIN
    if i < len(words) and words[i][1].upper() in ("ANALYZE", "ANALYSE"):
        i += 1
    if i < len(words) and words[i][1].startswith("("):
        depth = 0
        while i < len(words):
            depth += words[i][1].count("(") - words[i][1].count(")")
            i += 1
            if depth <= 0:
                break
    return sql[words[i][0]:] if i < len(words) else ""
