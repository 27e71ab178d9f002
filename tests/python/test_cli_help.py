"""`lmaudit --help` reads well in a 100-column terminal: each command's entry in the command list is a summary
that fits its column, not a paragraph with the docstring's own line breaks in it (typer's rich mode keeps
them, so a two-line first paragraph showed as a ragged line and an orphan)."""

from __future__ import annotations

import pytest
import typer.main

from conftest import run_cli


def _commands():
    from ingest.cli.main import app

    root = typer.main.get_command(app)
    out = []
    for name, cmd in root.commands.items():
        out.append((name, cmd))
        if hasattr(cmd, "commands"):  # a group (typer vendors its own click)
            out += [(f"{name} {sub_name}", sub) for sub_name, sub in cmd.commands.items()]
    return out


def test_the_command_list_is_found() -> None:
    names = {n for n, _ in _commands()}
    assert {"build", "demo", "trace", "sandbox build", "mixture tokenizer"} <= names  # the walk sees groups


@pytest.mark.parametrize("name,cmd", _commands(), ids=lambda x: x if isinstance(x, str) else "")
def test_every_command_has_a_one_line_summary(name, cmd) -> None:
    text = cmd.short_help or cmd.help or ""
    summary = text.split("\n\n")[0].strip()
    assert summary, f"`lmaudit {name}` has no help"
    assert "\n" not in summary, f"`lmaudit {name}`: put a one-line summary, then a blank line, then details"


def test_help_runs_and_every_summary_wraps_to_two_lines_at_most() -> None:
    p = run_cli("--help")
    assert p.returncode == 0
    for name, cmd in _commands():
        summary = (cmd.short_help or cmd.help or "").split("\n\n")[0].strip()
        assert len(summary) <= 160, f"`lmaudit {name}`: summary of {len(summary)} characters (2 lines at most)"


@pytest.mark.parametrize("columns,width", [(None, 100), ("120", 120), ("80", 80)])
def test_piped_output_is_100_columns_unless_columns_says_otherwise(columns, width) -> None:
    """Piped or redirected (a CI log, `| tee`), rich would assume 80 columns and fold the headline tables."""
    import os
    import subprocess
    import sys

    from conftest import REPO

    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    if columns:
        env["COLUMNS"] = columns
    p = subprocess.run([sys.executable, "-c", "from ingest.cli.context import console, err_console; "
                        "print(console.width, err_console.width)"], capture_output=True, text=True, env=env, cwd=REPO)
    assert p.stdout.split() == [str(width), str(width)], p.stdout + p.stderr
