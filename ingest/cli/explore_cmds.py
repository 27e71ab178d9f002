"""`lmaudit explore` (the trace explorer) and `lmaudit docs` (dbt's documentation site): parse and print."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ingest.cli.context import console, state
from ingest.errors import UserError


def _serve_forever(server, what: str) -> None:
    host, port = server.server_address[:2]
    console.print(f"{what} at http://{host}:{port}/ (Ctrl-C stops it)", markup=False, highlight=False)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        console.print("stopped")
    finally:
        server.server_close()


def _mode(serve: bool, out: str | None) -> None:
    if serve and out:
        raise UserError("give either --serve or --out DIR, not both")


def explore(
    ctx: typer.Context,
    run: Annotated[list[str] | None, typer.Option("--run", "-r", help="Only these runs (repeat; default: all).")] = None,
    serve: Annotated[bool, typer.Option("--serve", help="Serve on 127.0.0.1 with every filter (the default).")] = False,
    out: Annotated[str | None, typer.Option("--out", help="Write static files to DIR instead (open DIR/index.html).")] = None,
    port: Annotated[int, typer.Option(help="Port for --serve (0: any free port).")] = 8765,
    page_size: Annotated[int, typer.Option(help="Generations per page.")] = 50,
) -> None:
    """Browse runs, generations, their spans and the training documents behind each span."""
    from ingest.explore.queries import MAX_PAGE, Explorer

    _mode(serve, out)
    if not 1 <= page_size <= MAX_PAGE:
        raise UserError(f"--page-size must be 1..{MAX_PAGE}, not {page_size}")
    st = state(ctx)
    explorer = Explorer(st.home, tuple(run or ()))
    try:
        if out:
            from ingest.explore.static import write_static

            res = write_static(explorer, Path(out), page_size)
            console.print(f"explorer: {res.index} ({res.n_generations} generations, {res.n_files} files, "
                          f"{res.n_bytes / 1e6:.1f} MB, {res.seconds:.1f}s)", markup=False, highlight=False)
            return
        from ingest.explore.server import make_server

        _serve_forever(make_server(explorer, port, page_size), "trace explorer")
    finally:
        explorer.close()


def docs(
    ctx: typer.Context,
    serve: Annotated[bool, typer.Option("--serve", help="Serve the site on 127.0.0.1 (the default).")] = False,
    out: Annotated[str | None, typer.Option("--out", help="Write the site to DIR (default <warehouse>/docs).")] = None,
    port: Annotated[int, typer.Option(help="Port for --serve (0: any free port).")] = 8080,
) -> None:
    """dbt's documentation site for the warehouse: every model's lineage and column descriptions."""
    from ingest.explore.docs import generate_docs, serve_folder

    _mode(serve, out)
    st = state(ctx)
    site = generate_docs(st.home, Path(out) if out else st.home / "docs")
    console.print(f"docs: {site.index} ({site.n_models} models)", markup=False, highlight=False)
    if out:
        return
    _serve_forever(serve_folder(site.folder, port), "dbt docs")


def register(app: typer.Typer) -> None:
    app.command("explore")(explore)
    app.command("docs")(docs)
