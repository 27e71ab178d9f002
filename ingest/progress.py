"""Progress for long steps, on a terminal and in a log.

On a terminal a step shows rich's live bar. Written to a pipe or a file (`nohup`, a cluster job's log, CI),
rich's live bar shows nothing while it runs and leaves a blank line when it ends (a transient bar) or a bar
of box characters (a kept one): the demo's log had eleven blank lines where the trace ran. There, a step
prints one plain line a minute instead (the same columns, without the bar), and a last line when it ends, so
a short step prints nothing and a long one can be followed with `tail -f`."""

from __future__ import annotations

import time
from typing import Any

from rich import get_console
from rich.console import Console
from rich.progress import BarColumn, Progress, ProgressColumn, TaskID

LINE_EVERY_S = 60.0  # a piped step's first line comes after this long, then one line per this long


class LineProgress(Progress):
    """A rich Progress without a live display: every `every_s` seconds one line with its columns."""

    def __init__(self, *columns: str | ProgressColumn, every_s: float = LINE_EVERY_S, **kwargs: Any) -> None:
        kwargs.pop("disable", None)
        kwargs.pop("transient", None)
        super().__init__(*(c for c in columns if not isinstance(c, BarColumn)), disable=True, **kwargs)
        self.every_s = every_s
        self._started_at = time.monotonic()
        self._last_line: float | None = None
        self._since_line = False

    def _tick(self) -> None:
        self._since_line = True
        now = time.monotonic()
        if now - (self._last_line if self._last_line is not None else self._started_at) >= self.every_s:
            self._line(now)

    def _line(self, now: float) -> None:
        self._last_line, self._since_line = now, False
        self.console.print(self.make_tasks_table(self.tasks), soft_wrap=True)

    def update(self, task_id: TaskID, **kwargs: Any) -> None:  # type: ignore[override]
        super().update(task_id, **kwargs)
        self._tick()

    def advance(self, task_id: TaskID, advance: float = 1) -> None:
        super().advance(task_id, advance)
        self._tick()

    def __exit__(self, *exc: Any) -> None:
        if self._last_line is not None and self._since_line and exc[0] is None:
            self._line(time.monotonic())  # where a long step ended
        super().__exit__(*exc)


def progress_bar(*columns: str | ProgressColumn, enabled: bool = True, console: Console | None = None,
                 transient: bool = True, every_s: float = LINE_EVERY_S) -> Progress:
    """rich's live bar on a terminal, `LineProgress` on a pipe or a file, nothing when not `enabled`."""
    out = console or get_console()
    if not enabled:
        return Progress(*columns, console=out, disable=True)
    if out.is_terminal:
        return Progress(*columns, console=out, transient=transient)
    return LineProgress(*columns, console=out, every_s=every_s)
