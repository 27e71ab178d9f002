"""What every case of the bad-input catalogues checks, written once.

test_bad_inputs.py (user errors and faults) and test_bad_inputs_index.py (damaged indexes, malformed files)
run the real command line in this process against a copy of one small warehouse. Each case must end in one
`error: ...` line with the expected exit code, no traceback, a lake byte-for-byte as it was, and nothing
staged. The two files build different warehouses and cases; the running and the checking are here.
"""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from ingest.cli.main import run


@dataclass
class Case:
    name: str
    args: list[str]                      # {home}, {data}, {idx}, {root} are filled in
    message: str                         # a substring of the one error line
    setup: Callable[[Path, Path], None] | None = None   # (home, data) -> None, before the lake snapshot
    rc: int = 2
    extra: list[str] = field(default_factory=list)       # global options instead of `-w <the copy>`
    fault: Callable[[pytest.MonkeyPatch, Path], None] | None = None  # (monkeypatch, home): a fault to inject


def write(path: Path, text: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    (path.write_bytes if isinstance(text, bytes) else path.write_text)(text)


def lake_digest(home: Path) -> dict[str, str]:
    """sha256 of every committed lake file (staging folders left out): equal before and after = nothing written."""
    lake = home / "lake"
    return {str(p.relative_to(lake)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(lake.rglob("*")) if p.is_file() and "_tmp" not in p.parts}


def run_case(case: Case, base: dict[str, Path], root: Path, capsys: pytest.CaptureFixture,
             monkeypatch: pytest.MonkeyPatch, cleanup: Callable[[], None] | None = None) -> Path:
    """Copy the module's warehouse and index under `root`, run the case, check its one error line and an
    unchanged lake; returns the copied warehouse for checks of the caller's own."""
    home = root / "wh"
    shutil.copytree(base["home"], home)
    shutil.copytree(base["idx"], root / "idx")
    data = base["data"]
    if case.setup:
        case.setup(home, data)
    before = lake_digest(home)
    if case.fault:
        case.fault(monkeypatch, home)
    fill = {"home": str(home), "data": str(data), "idx": str(root / "idx"), "root": str(root)}
    args = [a.format(**fill) for a in case.args]
    capsys.readouterr()
    try:
        rc = run([*(case.extra and [a.format(**fill) for a in case.extra] or ["-w", str(home)]), *args])
    finally:
        if cleanup:
            cleanup()
    out = capsys.readouterr()
    err = out.err.strip()
    assert rc == case.rc, (rc, err, out.out[-500:])
    assert "Traceback" not in out.err + out.out
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert case.message in lines[0], (case.message, lines[0])
    assert lake_digest(home) == before
    assert not list((home / "lake").glob("_tmp/txn-*")) and not list((home / "lake").glob("_txn/*"))  # nothing staged
    return home
