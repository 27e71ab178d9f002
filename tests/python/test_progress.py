"""Progress in a log (ingest/progress.py): a piped step prints nothing when short, one plain line per
`every_s` when long, and a last line where it ended; never rich's blank line or a bar of box characters.
Oracle: the lines counted by hand from a clock the test controls."""

from __future__ import annotations

import io

import pytest
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

import ingest.progress as progress_mod
from ingest.progress import LineProgress, progress_bar


def _piped() -> tuple[Console, io.StringIO]:
    buf = io.StringIO()
    return Console(file=buf, width=100, force_terminal=False), buf


@pytest.fixture
def clock(monkeypatch):
    now = [1000.0]
    monkeypatch.setattr(progress_mod.time, "monotonic", lambda: now[0])
    return now


def test_a_piped_step_gets_line_progress_a_terminal_the_live_bar_and_off_is_off() -> None:
    out, _ = _piped()
    assert isinstance(progress_bar(TextColumn("x"), console=out), LineProgress)
    tty = Console(file=io.StringIO(), force_terminal=True)
    bar = progress_bar(TextColumn("x"), console=tty)
    assert type(bar) is Progress and not bar.disable
    off = progress_bar(TextColumn("x"), console=out, enabled=False)
    assert type(off) is Progress and off.disable


def test_a_short_piped_step_prints_nothing(clock) -> None:
    out, buf = _piped()
    with progress_bar(TextColumn("[bold]trace"), BarColumn(), MofNCompleteColumn(), console=out, every_s=60) as bar:
        task = bar.add_task("", total=10)
        for _ in range(10):
            clock[0] += 1  # 10 s in all
            bar.advance(task)
    assert buf.getvalue() == ""  # rich's transient bar left "\n" here


def test_a_long_piped_step_prints_a_line_a_minute_and_where_it_ended(clock) -> None:
    out, buf = _piped()
    with progress_bar(TextColumn("[bold]trace"), BarColumn(), MofNCompleteColumn(), console=out, every_s=60) as bar:
        task = bar.add_task("", total=10)
        for _ in range(10):
            clock[0] += 25
            bar.advance(task)
    lines = [" ".join(x.split()) for x in buf.getvalue().splitlines()]
    # advances at t = 25, 50, ..., 250; a line when >= 60 s since the last (or the start): 75, 150, 225; the end
    assert lines == ["trace 3/10", "trace 6/10", "trace 9/10", "trace 10/10"], lines
    assert not any(ch in buf.getvalue() for ch in "━╺╸")  # no bar characters in a log


def test_no_last_line_after_a_failure(clock) -> None:
    out, buf = _piped()
    with pytest.raises(RuntimeError):
        with progress_bar(TextColumn("step"), MofNCompleteColumn(), console=out, every_s=60) as bar:
            task = bar.add_task("", total=5)
            clock[0] += 61
            bar.update(task, advance=1)
            clock[0] += 1
            bar.update(task, advance=1)
            raise RuntimeError("boom")
    assert buf.getvalue().splitlines() == ["step 1/5"]  # the error's own one line follows, not a progress line
