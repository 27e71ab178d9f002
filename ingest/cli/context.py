"""State shared by all subcommands (the chosen warehouse) and the console they print to."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import typer
from rich.console import Console

from ingest.home import resolve_home
from ingest.lake import Lake

# Written to a file or a pipe (`lmaudit demo | tee demo.log`, a CI log), rich assumes 80 columns, and the
# headline tables (made for 100) fold words in two; a terminal's own width, or $COLUMNS, still wins.
PIPED_WIDTH = 100


def _console(stderr: bool = False) -> Console:
    out = Console(stderr=stderr)
    if not out.is_terminal and "COLUMNS" not in os.environ:
        out.width = PIPED_WIDTH
    return out


console = _console()
err_console = _console(stderr=True)


@dataclass
class CliState:
    warehouse: str | None = None

    @property
    def home(self) -> Path:
        return resolve_home(self.warehouse)

    @property
    def lake(self) -> Lake:
        return Lake(self.home)


def state(ctx: typer.Context) -> CliState:
    root = ctx.find_root()
    if not isinstance(root.obj, CliState):
        root.obj = CliState()
    return root.obj
