"""Entry point of `lmaudit`: the command tree and the user-error boundary.

Usage and user errors (`UserError`) print one line and exit 2; a failed step (`StepFailed`) one line and
exit 1; anything else is a bug: one line naming the file in `<warehouse>/logs/` that holds its traceback.
"""

from __future__ import annotations

import inspect
import os
import sys
from pathlib import Path
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
    app.add_typer(__import__("ingest.cli.mixture_cmds", fromlist=["app"]).app, name="mixture")
    __import__("ingest.cli.explore_cmds", fromlist=["register"]).register(app)  # explore, docs
    app.add_typer(__import__("ingest.cli.vocab_cmds", fromlist=["app"]).app, name="vocab")
    app.add_typer(__import__("ingest.cli.mia_benchmark_cmds", fromlist=["app"]).app, name="mia-benchmark")
    __import__("ingest.cli.contamination_cmds", fromlist=["register"]).register(app)  # contamination, -sample
    __import__("ingest.cli.provenance_cmds", fromlist=["register"]).register(app)  # provenance
    __import__("ingest.cli.audit_cmds", fromlist=["register"]).register(app)  # audit documents


_register_optional()


def flow_paragraphs(text: str) -> str:
    """A command's help with the docstring's line breaks taken out of every paragraph after the first (the
    first is the one-line summary). typer's rich help keeps them, so at any width other than the source's a
    paragraph broke mid-sentence ('... and its continuation' / 'is checked against ...')."""
    first, *rest = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join([first, *(p if p.startswith("\b") else " ".join(p.split()) for p in rest)])


def _flow_help(typer_app: typer.Typer) -> None:
    """`flow_paragraphs` for every command's docstring (a help= given explicitly is left as written)."""
    for info in typer_app.registered_commands:
        doc = inspect.getdoc(info.callback) if info.help is None else None
        if doc:
            info.help = flow_paragraphs(doc)
    for group in typer_app.registered_groups:
        _flow_help(group.typer_instance)


_flow_help(app)


def _click_like(e: BaseException) -> bool:
    """A click exception, from click itself or from the copy typer 0.29 vendors (`typer._click`), which
    `except click.ClickException` does not catch."""
    return any(c.__name__ == "ClickException" for c in type(e).__mro__)


def _is_usage_error(e: BaseException) -> bool:
    return any(c.__name__ == "UsageError" for c in type(e).__mro__)


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _crash_log(e: BaseException, argv: list[str] | None = None) -> str:
    """Write the traceback of an unexpected error where the user can find it; return the path."""
    import tempfile
    import time
    import traceback

    from ingest.home import resolve_home

    try:
        folder = resolve_home(state_warehouse(argv)) / "logs"
        folder.mkdir(parents=True, exist_ok=True)
    except Exception:  # noqa: BLE001 - no usable warehouse: the temp folder
        folder = Path(tempfile.gettempdir())
    name = f"lmaudit-crash-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"
    text = "".join(traceback.format_exception(e))
    for where in (folder, Path(tempfile.gettempdir())):
        try:
            (where / name).write_text(text)
            return str(where / name)
        except OSError:  # a read-only or full warehouse: try the temp folder
            continue
    return "nowhere (the warehouse and the temp folder are not writable)"


def state_warehouse(argv: list[str] | None = None) -> str | None:
    """The --warehouse given on the command line, if any (the crash handler has no click context)."""
    args = sys.argv[1:] if argv is None else argv
    for i, a in enumerate(args):
        if a in ("--warehouse", "-w") and i + 1 < len(args):
            return args[i + 1]
        if a.startswith("--warehouse="):
            return a.split("=", 1)[1]
    return None


def hoist_warehouse(args: list[str]) -> list[str]:
    """`lmaudit demo --warehouse W` means `lmaudit --warehouse W demo`: the option belongs to the top
    command, but users put it after the subcommand too (no subcommand has its own -w/--warehouse)."""
    out, front, i = [], [], 0
    while i < len(args):
        a = args[i]
        if a == "--":
            out += args[i:]
            break
        if a in ("--warehouse", "-w") and i + 1 < len(args):
            front += [a, args[i + 1]]
            i += 2
            continue
        if a.startswith("--warehouse="):
            front.append(a)
        else:
            out.append(a)
        i += 1
    return front + out


def _environment_error(e: BaseException, argv: list[str] | None) -> str | None:
    """An OSError that is the machine's state, not a bug: permissions, a read-only or full disk, or a
    warehouse folder that cannot be created. The one line names the path; None for anything else."""
    import errno

    if not isinstance(e, OSError) or e.errno is None:
        return None
    what = f"{e.filename} " if e.filename else ""
    if e.errno in (errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC, errno.EDQUOT):
        return (f"cannot use {what}({os.strerror(e.errno)}); fix its permissions or free space, then re-run the "
                "same command")
    if e.errno in (errno.ENOENT, errno.ENOTDIR) and e.filename:
        from ingest.home import resolve_home

        try:
            home, failed = resolve_home(state_warehouse(argv)), Path(os.fsdecode(e.filename)).resolve()
        except Exception:  # noqa: BLE001 - no warehouse to compare with
            return None
        if failed == home or failed in home.parents:
            return (f"cannot create the warehouse folder {home} ({os.strerror(e.errno)}); choose a writable "
                    "place with --warehouse DIR or LMAUDIT_HOME")
    return None


def _print_error(message: str) -> None:
    """`error: <message>` on one line. The message is never read as rich markup: a path or a value with
    `[/x]` in it once turned the error line itself into a MarkupError traceback."""
    from rich.text import Text

    line = Text("error:", style="red")
    line.append(" " + _one_line(message))
    try:
        err_console.print(line, highlight=False, soft_wrap=True)
    except Exception:  # noqa: BLE001 - a broken terminal: plain stderr still says it
        sys.stderr.write(f"error: {_one_line(message)}\n")


def run(argv: list[str] | None = None) -> int:
    """The one error path: a user or usage error prints one line and exits 2; a failed step exits 1; an
    interrupt 130; anything unexpected prints one line naming where its traceback was written, and exits 1."""
    def fail(message: str, code: int) -> int:
        _print_error(message)
        return code

    argv = hoist_warehouse(sys.argv[1:] if argv is None else list(argv))
    try:
        rc = app(args=argv, standalone_mode=False)
    except UserError as e:
        return fail(str(e), e.exit_code)
    except typer.Exit as e:
        return e.exit_code
    except KeyboardInterrupt:
        err_console.print("interrupted; re-run the same command to resume")
        return 130
    except Exception as e:  # noqa: BLE001 - the boundary: everything ends here as one line
        if type(e).__name__ == "Abort":
            cause = e.__cause__ or e.__context__
            if isinstance(cause, EOFError):  # click turns an EOFError inside a command into Abort
                return fail(f"an input ended early, it may be truncated or corrupt ({cause or 'end of file'}); "
                            "check the file and run the command again", 2)
            err_console.print("aborted")
            return 130
        if _click_like(e):
            if _is_usage_error(e) and not e.format_message().strip():
                return 2  # no_args_is_help: the help was the answer, click's exit status stays
            hint = ""
            ctx = getattr(e, "ctx", None)
            if _is_usage_error(e):
                hint = f"; see `{ctx.command_path if ctx is not None else 'lmaudit'} --help`"
            return fail(e.format_message().rstrip(".") + hint, 2 if _is_usage_error(e) else getattr(e, "exit_code", 1) or 1)
        env = _environment_error(e, argv)
        if env:
            return fail(env, 2)
        path = _crash_log(e, argv)
        return fail(f"unexpected {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''} "
                    f"(a bug; the traceback is in {path})", 1)
    return rc if isinstance(rc, int) and not isinstance(rc, bool) else 0


if __name__ == "__main__":
    sys.exit(run())
