"""Open the built DuckDB file read-only, wherever the warehouse folder now lives.

dbt-duckdb writes the staging views with the lake's absolute path (`read_parquet('<warehouse>/lake/runs/
*.parquet')`): a DuckDB view keeps the SQL it was created with, and a relative path would resolve against
the reader's working directory, not the database file (so every notebook, BI tool and test that opens the
file would break instead). After `cp -r` or `mv` of a warehouse those views still name the old lake: gone
(the copy's queries fail), or still there (the copy silently reads the original's data, and the read-only
guard of `lmaudit sql` refuses it as a file outside the warehouse).

So a reader here re-points them: each view of the file whose SQL reads another folder's lake is shadowed,
for this connection only, by a temporary view of the same name over this warehouse's lake (DuckDB looks
names up in `temp` first, `main.<name>` included). Nothing is written to the file, so it works on a
read-only copy too; `lmaudit build` in the new place rewrites the views for good (and for other readers).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ingest.errors import UserError
from ingest.home import db_path

# how dbt-duckdb renders a lake source (models/staging/_lake__sources.yml, external_location)
_LAKE_READ = re.compile(r"read_parquet\('((?:[^']|'')*?)/lake/[A-Za-z0-9_]+/\*\.parquet'")
# how DuckDB names such a path in an error: Cannot access file "<warehouse>/lake/runs/*.parquet"
_ERROR_PATH = re.compile(r'"([^"]*?)/lake/[A-Za-z0-9_]+/\*\.parquet"')


@dataclass(frozen=True)
class Repointed:
    """What `repoint_views` did: the lake folder the file's views were built for and the views re-pointed."""

    built_for: str | None
    views: tuple[str, ...]


def require_database(home: Path) -> Path:
    """`<home>/lmaudit.duckdb`, or one line saying why there is none: a folder that is no warehouse at all (a
    mistyped --warehouse: `lmaudit build` there would build an empty one) or a warehouse not built yet."""
    from ingest.home import ENV_HOME

    path = db_path(home)
    if path.exists():
        return path
    if not (Path(home) / "lake").is_dir():
        what = "does not exist" if not Path(home).exists() else "holds no lake"
        raise UserError(f"no warehouse at {home} (the folder {what}); pass the warehouse you built with "
                        f"--warehouse DIR (or ${ENV_HOME}), or make one with `lmaudit demo` or `lmaudit init`")
    raise UserError(f"no warehouse database at {path}; run `lmaudit build` first")


def connect_read_only(home: Path):
    """A read-only connection to `<home>/lmaudit.duckdb` whose staging views read `<home>/lake`."""
    import duckdb

    path = require_database(home)
    try:
        con = duckdb.connect(str(path), read_only=True)
    except duckdb.IOException as e:
        raise UserError(f"cannot open {path} read-only ({str(e).splitlines()[0]}); is `lmaudit build` writing it "
                        "right now? retry when it finishes") from None
    repoint_views(con, home)
    return con


def lake_prefix(home: Path) -> str:
    """The warehouse folder as dbt writes it into the views (`$LMAUDIT_HOME`, an absolute path)."""
    return str(Path(home).resolve())


def repoint_views(con, home: Path) -> Repointed:
    """Shadow every view of the database file that reads another folder's lake with a temporary view that
    reads `<home>/lake`. Run before the connection is locked down (it reads the lake's Parquet schemas)."""
    import duckdb

    here = lake_prefix(home)
    here_sql = here.replace("'", "''")  # as it stands inside a SQL string literal
    rows = con.execute("select view_name, sql from duckdb_views() where not internal and not temporary "
                       "and database_name = current_database() and schema_name = 'main'").fetchall()
    built_for, done = None, []
    for name, sql in rows:
        olds = {m.group(1) for m in _LAKE_READ.finditer(sql or "")} - {here_sql}
        if not olds:
            continue
        built_for = built_for or sorted(olds)[0].replace("''", "'")
        new = sql
        for old in olds:
            new = new.replace(f"read_parquet('{old}/lake/", f"read_parquet('{here_sql}/lake/")
        new, n = re.subn(r"^\s*CREATE\s+VIEW\s", "CREATE OR REPLACE TEMP VIEW ", new, count=1, flags=re.IGNORECASE)
        if not n:
            continue
        try:
            con.execute(new)
        except duckdb.Error:  # e.g. a lake table this copy lacks: never fall back to the original's files
            _refuse_view(con, name, built_for, here)
            continue
        done.append(name)
    return Repointed(built_for, tuple(done))


def _refuse_view(con, name: str, built_for: str, here: str) -> None:
    """Shadow a view that cannot read this warehouse's lake with one that fails with the fix, column for column,
    so no reader (export, explore, report) silently reads the lake the file was built for."""
    msg = (f"{name} cannot read {here}/lake (the warehouse was moved or copied from {built_for} and this copy "
           f"lacks its files); run `lmaudit build` here").replace("'", "''")
    cols = con.execute("select column_name, data_type from duckdb_columns() where table_name = ? "
                       "and schema_name = 'main' and not internal order by column_index", [name]).fetchall()
    select = ", ".join(f"cast(null as {dtype}) as \"{col.replace(chr(34), chr(34) * 2)}\"" for col, dtype in cols)
    # the error sits in a filter, which runs whatever the query projects (count(*) included)
    con.execute(f'create or replace temp view "{name}" as select {select or "null as error"} from range(1) '
                f"where cast(error('{msg}') as boolean) is null")


def stale_lake_message(error: str, home: Path) -> str | None:
    """A one-line fix for a DuckDB error that names a lake path outside this warehouse, else None."""
    m = _ERROR_PATH.search(error)
    if m is None or m.group(1) == lake_prefix(home):
        return None
    return (f"the warehouse database {db_path(home)} was built for the lake in {m.group(1)}/lake (the warehouse was "
            f"moved or copied); run `lmaudit build` to point it at {lake_prefix(home)}/lake")
