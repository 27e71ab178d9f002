"""Printed tables never cut an id: they fold long text, and print one block per row when too wide."""

from __future__ import annotations

import pytest

from ingest.cli.context import console
from ingest.cli.warehouse_cmds import _print_rows

COLS = ["run_id", "model_name", "setting", "n_generations", "als", "fmr", "fmr20", "fmr_nonblank", "blank_rate"]
ROWS = [("sandbox-tiny-unconditional", "tiny-seed0", "unconditional", 20, 33.45, 0.35, 0.35, 0.368, 0.05),
        ("sandbox-tiny-minimal_cue", "tiny-seed0", "minimal_cue", 12, 3.75, 0.25, None, 0.25, 0.0)]


def _render(width: int) -> str:
    old = console.width
    console.width = width
    try:
        with console.capture() as cap:
            _print_rows(COLS, ROWS)
    finally:
        console.width = old
    return cap.get()


@pytest.mark.parametrize("width", [60, 100, 140, 200])
def test_every_id_and_value_is_printed_whole(width: int) -> None:
    out = _render(width)
    assert max(len(line) for line in out.splitlines()) <= width
    for row in ROWS:
        for v in row:
            assert ("NULL" if v is None else str(v)) in out, (width, v)
    assert "…" not in out


def test_a_table_when_it_fits_blocks_when_it_does_not() -> None:
    assert "┃ run_id" in _render(200) and "-- row 1 --" not in _render(200)
    narrow = _render(60)
    assert "-- row 1 --" in narrow and "run_id        : sandbox-tiny-unconditional" in narrow


def test_sql_csv_writes_plain_newlines(tmp_path) -> None:
    """`lmaudit sql --csv` ends lines with \\n, not Python's default \\r\\n (cut, awk and $(...) keep the \\r)."""
    import duckdb

    from conftest import run_cli

    home = tmp_path / "wh"
    home.mkdir()
    duckdb.connect(str(home / "lmaudit.duckdb")).close()
    proc = run_cli("sql", "select 'a' as x, 1 as y union all select 'b', 2 order by x", "--csv", home=home)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "x,y\na,1\nb,2\n"


def test_terminal_escapes_in_cells_are_shown_not_sent() -> None:
    from ingest.cli.warehouse_cmds import printable

    assert printable("a\x1b[2Jb\x07c\x9bd") == "a\\x1b[2Jb\\x07c\\x9bd"
    assert printable("tab\there\nnew line é 中") == "tab\there\nnew line é 中"
