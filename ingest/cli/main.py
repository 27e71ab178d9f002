"""Entry point of `lmaudit`: the command tree and the user-error boundary.

User errors (`UserError`) print one line and exit 2; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from ingest import __version__
from ingest.cli import import_cmds, warehouse_cmds
from ingest.cli.context import err_console, state
from ingest.errors import UserError

app = typer.Typer(
    name="lmaudit",
    help="Audit what a language model learned from its training data: memorization propensity and "
         "data-mixture estimates, kept in a DuckDB warehouse.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


@app.callback()
def main(
    ctx: typer.Context,
    warehouse: Annotated[str | None, typer.Option("--warehouse", "-w", envvar="LMAUDIT_HOME",
                                                   help="Warehouse folder (default ./warehouse).")] = None,
) -> None:
    state(ctx).warehouse = warehouse


@app.command()
def version() -> None:
    """Print the lmaudit version."""
    print(__version__)


app.command()(warehouse_cmds.init)
app.command()(warehouse_cmds.build)
app.command()(warehouse_cmds.sql)
app.command()(warehouse_cmds.export)
app.command()(warehouse_cmds.report)
app.add_typer(import_cmds.app, name="import")


def _register_optional() -> None:
    """Subcommand groups added by later modules (index, sandbox, demo, ...)."""
    from ingest.cli import demo_cmds, generate_cmds, index_cmds, prompts_cmds, sandbox_cmds, trace_cmds

    app.add_typer(index_cmds.app, name="index")
    app.add_typer(prompts_cmds.app, name="prompts")
    app.add_typer(sandbox_cmds.app, name="sandbox")
    app.command("generate")(generate_cmds.generate)
    app.command("trace")(trace_cmds.trace)
    app.command("demo")(demo_cmds.demo)
    __import__("ingest.cli.classify_cmds", fromlist=["register"]).register(app)  # classify, reference
    app.command("score")(__import__("ingest.cli.score_cmds", fromlist=["score"]).score)


_register_optional()


def run(argv: list[str] | None = None) -> int:
    try:
        app(args=argv, standalone_mode=False)
    except UserError as e:
        err_console.print(f"[red]error:[/red] {e}", highlight=False, soft_wrap=True)
        return e.exit_code
    except typer.Exit as e:
        return e.exit_code
    except typer.Abort:
        err_console.print("aborted")
        return 130
    except KeyboardInterrupt:
        err_console.print("interrupted; re-run the same command to resume")
        return 130
    except Exception as e:  # click usage errors carry their own message
        import click

        if isinstance(e, click.ClickException):
            e.show()
            return e.exit_code
        raise
    return 0


if __name__ == "__main__":
    sys.exit(run())
