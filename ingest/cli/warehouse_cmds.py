"""Warehouse commands: `init`, `build`, `sql`."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Column, Table
from rich.text import Text

from ingest.cli.context import console, err_console, state
from ingest.errors import StepFailed, UserError
from ingest.sql_output import printable
from ingest.warehouse_db import require_database


def init(ctx: typer.Context) -> None:
    """Create an empty warehouse (lake folders with typed zero-row tables)."""
    st = state(ctx)
    st.lake.init()
    console.print(f"warehouse ready at {st.home}")


def build(
    ctx: typer.Context,
    select: Annotated[list[str] | None, typer.Option("--select", "-s", help="dbt selection, e.g. 'staging' or '+fct_propensity'.")] = None,
    exclude: Annotated[list[str] | None, typer.Option("--exclude", help="dbt nodes to leave out.")] = None,
    full_refresh: Annotated[bool, typer.Option(help="Passed to dbt: rebuild the incremental PropMe models (text checks, loop checks, generation facts) from nothing, and reload seed tables. Never needed for new, changed or removed runs or a changed var: those rows are recomputed anyway. Needed after a model's columns change (the build then fails and says so).")] = False,
    vars_: Annotated[str | None, typer.Option("--vars", help="dbt vars as YAML (the propme_* and mixture_* vars of dbt_project.yml; each name and value is checked against its type and range before anything runs), e.g. '{propme_bootstrap_resamples: 1000}'.")] = None,
    full_tests: Annotated[bool, typer.Option("--full-tests", help="Also run dbt's unit tests (they check the models' SQL, not your data) and the full-scan key tests on the largest staging table (keys the lake writer already guarantees); CI runs them, a plain build leaves them out.")] = False,
) -> None:
    """Run `dbt build` over the warehouse (models and data tests) and print a one-line summary.

    --full-tests adds dbt's unit tests and the full-scan key tests."""
    from ingest.build import build as run_build

    st = state(ctx)
    result = run_build(st.home, select or (), exclude or (), full_refresh, vars_, full_tests=full_tests)
    if result.success:
        console.print(result.summary())
        return
    fail_build(result, st.home)


def fail_build(result, home) -> None:
    """List a failed build's failures (at most 10) on stdout and raise its one-line `StepFailed`."""
    shown = 10
    for f in result.failures[:shown]:
        console.print(Text("x ", style="red") + Text(f))
    if len(result.failures) > shown:
        console.print(f"... and {len(result.failures) - shown} more failures", markup=False)
    first = f"; first: {result.failures[0]}" if result.failures else ""
    raise StepFailed(f"{result.summary()}{first} (details in {home / 'dbt' / 'logs' / 'dbt.log'})")


def sql(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(help="SQL over the warehouse, e.g. \"select * from stg_runs\"; or @file.sql (@sql/NAME.sql: "
                                    "the project's ready queries, found from any folder).")],
    max_rows: Annotated[int, typer.Option(help="Rows to print (the query itself is not limited).")] = 50,
    csv: Annotated[bool, typer.Option("--csv", help="Same as --format csv.")] = False,
    fmt: Annotated[str, typer.Option("--format", help="table (default, for the terminal), or for pipes and files: "
                                     "csv, tsv, json (JSON Lines) or markdown; LF line endings.")] = "table",
) -> None:
    """Run a read-only query against the built warehouse (the DuckDB file dbt writes)."""
    from ingest.sql_output import FORMATS

    fmt = "csv" if csv else fmt
    if fmt not in FORMATS:
        raise UserError(f"--format {fmt!r} is not one of {', '.join(FORMATS)}")
    import duckdb

    st = state(ctx)
    path = require_database(st.home)
    if query.startswith("@"):
        from ingest.sql_files import read_query_file

        query = read_query_file(query[1:])  # `@sql/NAME.sql`: the project's ready queries, from any folder
    if not query.strip():
        raise UserError("the query is empty; give SQL, e.g. lmaudit sql \"select * from stg_runs\", or @file.sql")
    from ingest.sql_guard import open_read_only

    con = open_read_only(path, st.home)
    try:
        cur = con.execute(query)
        if cur.description is None:
            return
        cols, rows = [d[0] for d in cur.description], cur.fetchmany(max_rows + 1)
    except duckdb.PermissionException as e:
        from ingest.warehouse_db import stale_lake_message

        raise UserError(stale_lake_message(str(e), st.home) or "lmaudit sql reads only the warehouse (its database "
                        f"and lake folder): {str(e).splitlines()[0]}") from None
    except duckdb.Error as e:
        raise UserError(f"query failed: {str(e).splitlines()[0]}") from None
    finally:
        con.close()
    if fmt != "table":
        import sys

        from ingest.sql_output import write_rows

        write_rows(cols, rows[:max_rows], fmt, sys.stdout)
        if len(rows) > max_rows:  # on stderr: the output itself stays valid csv/json/...
            err_console.print(f"(first {max_rows} rows written; use --max-rows to get more)")
        return
    _print_rows(cols, rows[:max_rows])
    if not rows:  # the header alone could be missed: say that the query matched nothing
        console.print("0 rows")
    elif len(rows) > max_rows:
        console.print(f"(first {max_rows} rows shown; use --max-rows to see more)")


def _print_rows(cols: list[str], rows: list[tuple]) -> None:
    """A table whose ids and names are never cut ("sandbox…" cannot be told from its neighbours).

    Text cells keep their width up to 32 characters (longer text folds onto more lines); numbers and
    headers keep theirs. When even that is wider than the terminal, each row is printed as a block of `column: value`
    lines instead (psql's expanded mode), rather than cutting columns off the right edge."""
    cells = [["NULL" if v is None else printable(str(v)) for v in r] for r in rows]
    natural = [max([len(c), *(len(r[i]) for r in cells)]) for i, c in enumerate(cols)]
    text = [any(isinstance(r[i], str) for r in rows) for i in range(len(cols))]
    need = [min(n, 32) if t else n for n, t in zip(natural, text)]  # rich never breaks a header or a number
    if sum(need) + 3 * len(cols) + 1 <= console.width:
        # Text, not str: a value like '[/x]' is data, not rich markup (it used to crash the printing)
        table = Table(*(Column(Text(c), overflow="fold", min_width=n) for c, n in zip(cols, need)), show_lines=False)
        for r in cells:
            table.add_row(*(Text(v) for v in r))
        console.print(table)
        return
    pad = max(len(c) for c in cols)
    if not cells:
        console.print(" | ".join(cols), highlight=False, soft_wrap=True, markup=False)
    for k, r in enumerate(cells, 1):
        console.print(Text(f"-- row {k} --", style="dim"))
        for c, v in zip(cols, r):
            console.print(f"{c.ljust(pad)} : {v}", highlight=False, soft_wrap=True, markup=False)


def export(
    ctx: typer.Context,
    format: Annotated[str, typer.Option("--format", help="parquet or csv.")] = "parquet",
    models: Annotated[list[str] | None, typer.Option("--models", "-m", help="Marts to export (default: every fct_/dim_ table).")] = None,
    publish: Annotated[bool, typer.Option("--publish/--no-publish", help="Also write the read-only published copy "
                                          "of the database (--no-publish skips it).")] = True,
) -> None:
    """Export marts to <warehouse>/exports for BI tools, plus a read-only copy of the database."""
    from ingest.export import export as run_export

    st = state(ctx)
    require_database(st.home)  # before the exports folder is made: a mistyped --warehouse stays uncreated
    res = run_export(st.home, format, models or None, publish=publish)
    for f in res.files:
        console.print(f"wrote {f}")
    if res.published:
        console.print(f"published read-only copy: {res.published}")


def report(
    ctx: typer.Context,
    out: Annotated[str | None, typer.Option(help="Output folder (default <warehouse>/report).")] = None,
) -> None:
    """Draw the figures (PNG) and write one self-contained HTML report from the marts."""
    from pathlib import Path

    from ingest.report.build import build_report

    st = state(ctx)
    require_database(st.home)  # before the report folder is made: a mistyped --warehouse stays uncreated
    r = build_report(st.home, Path(out) if out else None)
    console.print(f"report: {r.html} ({len(r.images)} figures)")
    for s in r.skipped:
        console.print(f"  skipped {s}")
