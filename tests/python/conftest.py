"""Shared fixtures: a fresh warehouse folder per test, and a way to run the real `lmaudit` command."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ingest.lake import Lake

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / "warehouse"
    Lake(h).init()
    return h


@pytest.fixture
def lake(home: Path) -> Lake:
    return Lake(home)


def run_cli(*args: str, home: Path | None = None, check: bool = False) -> subprocess.CompletedProcess:
    """Run `python -m ingest.cli.main ...` as a user would run `lmaudit ...`."""
    env = dict(os.environ)
    if home is not None:
        env["LMAUDIT_HOME"] = str(home)
    env["COLUMNS"] = "200"
    proc = subprocess.run([sys.executable, "-m", "ingest.cli.main", *args], capture_output=True, text=True,
                          env=env, cwd=REPO)
    if check and proc.returncode != 0:
        raise AssertionError(f"lmaudit {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc
