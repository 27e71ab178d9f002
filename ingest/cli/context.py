"""State shared by all subcommands (the chosen warehouse) and the console they print to."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import typer
from rich.console import Console

from ingest.home import resolve_home
from ingest.lake import Lake

console = Console()
err_console = Console(stderr=True)


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
